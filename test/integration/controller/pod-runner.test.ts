import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clientsFromKubeconfigFile, deploymentState } from '@baton/kube';
import { type LocalRegistry, type PodRunner, startControllerImageRegistry, startPodRunner } from '@baton/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/kube.js';
import {
  type ControllerEnv,
  condition,
  gitSyncStatus,
  NS,
  pushAsBootstrap,
  putSecret,
  sourceRepoFiles,
  startEnv,
  WEBHOOK_SECRET,
} from './harness.js';

// No manual step: the push creates the controller's Deployment, kwok "runs" its pod, and testenv's pod runner acts
// as the kubelet for the controller image: it pulls the digest 40-deployment.yaml pins from a local registry serving
// the image built from these sources, and runs it in its own mount and PID namespaces as 65532 with a token bound to
// that pod, for its ServiceAccount.
const DEPLOYMENT = new URL('../../../bootstrap-manifests/baton-controller/40-deployment.yaml', import.meta.url)
  .pathname;
let env: ControllerEnv;
let registry: LocalRegistry;
let runner: PodRunner | undefined;

beforeAll(async () => {
  registry = await startControllerImageRegistry(DEPLOYMENT);
  env = await startEnv();
});

afterAll(async () => {
  await runner?.stop();
  await env?.stop();
  await registry?.stop();
});

async function leaseHolder() {
  const lease = await env.admin.get<{ spec?: { holderIdentity?: string | null } }>(
    `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/baton-controller`,
  );
  return lease?.spec?.holderIdentity ?? undefined;
}

async function controllerPods() {
  const list = await env.admin.call<{ items: { metadata: { name: string; deletionTimestamp?: string } }[] }>(
    'GET',
    `/api/v1/namespaces/${NS}/pods?labelSelector=app.kubernetes.io%2Fname%3Dbaton-controller`,
  );
  return list.items.filter((p) => !p.metadata.deletionTimestamp).map((p) => p.metadata.name);
}

/** A one-replica Deployment of `containers`, its pods labelled with its name. */
async function createDeployment(namespace: string, name: string, containers: readonly object[]): Promise<void> {
  const labels = { 'app.kubernetes.io/name': name };
  await env.admin.call('POST', `/apis/apps/v1/namespaces/${namespace}/deployments`, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace },
    spec: { replicas: 1, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers } } },
  });
}

describe('testenv pod runner for the controller image', () => {
  it('runs the pushed Deployment as a local process with the pod identity, and follows pod replacement', async () => {
    const files = await sourceRepoFiles(env.git.repoUrl(env.repo));
    const sha = await env.git.commitFiles(env.repo, files, 'initial');
    await pushAsBootstrap(
      env.admin,
      Object.fromEntries(Object.entries(files).filter(([p]) => p.includes('/baton-controller/'))),
    );
    await putSecret(env.admin, NS, 'baton-pull-credential', {
      username: env.git.credentials.username,
      password: env.git.credentials.password,
    });
    await putSecret(env.admin, NS, 'baton-webhook', { secret: WEBHOOK_SECRET });
    runner = await startPodRunner({
      kubeconfigPath: env.cluster.kubeconfigPath,
      imagePrefix: 'ghcr.io/baton-dev/baton-controller',
      registryMirrors: { 'ghcr.io': registry.host },
    });

    await eventually(
      async () => (await gitSyncStatus(env.admin))?.lastAppliedRevision === sha,
      90_000,
      'the pod-run controller to apply the repository',
      500,
    ).catch(async (err: Error) => {
      // What the controller said is the only way to tell why it did not sync.
      const logs = await Promise.all(runner!.pods().map((p) => readFile(p.logPath, 'utf8').catch(() => '')));
      throw new Error(`${err.message}; pod logs:\n${logs.join('\n---\n').slice(-6000)}`);
    });
    expect(condition(await gitSyncStatus(env.admin), 'Ready')?.status).toBe('True');
    const [pod] = await controllerPods();
    expect(runner.pods().map((p) => p.name)).toEqual([pod]);
    expect(await leaseHolder()).toBe(pod);
    const log = await readFile(runner.pods()[0]!.logPath, 'utf8');
    expect(log).toContain('"msg":"sync succeeded"');

    // Delete the pod: the ReplicaSet makes a new one, the runner stops the old process and starts one for it.
    await env.admin.call('DELETE', `/api/v1/namespaces/${NS}/pods/${pod}`, { gracePeriodSeconds: 0 });
    await eventually(
      async () => {
        const names = runner!.pods().map((p) => p.name);
        return names.length === 1 && names[0] !== pod;
      },
      60_000,
      'a process for the replacement pod',
      500,
    );
    const next = runner.pods()[0]!.name;
    await eventually(async () => (await leaseHolder()) === next, 60_000, 'the replacement pod to lead', 500);
    const sha2 = await env.git.commitFiles(
      env.repo,
      {
        'clusters/demo/apps/settings.yaml':
          'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: demo\ndata:\n  greeting: from the pod\n',
      },
      'second',
    );
    await eventually(
      async () => (await gitSyncStatus(env.admin))?.lastAppliedRevision === sha2,
      30_000,
      'the replacement to apply the next commit',
      500,
    );

    const pids = runner.pods().map((p) => p.pid);
    await runner.stop();
    runner = undefined;
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow();
  });

  it('leaves a pod whose digest the registry does not have ErrImagePull, and the Deployment says why', async () => {
    const missing = `ghcr.io/baton-dev/baton-controller@sha256:${'0'.repeat(64)}`;
    runner = await startPodRunner({
      kubeconfigPath: env.cluster.kubeconfigPath,
      imagePrefix: 'ghcr.io/baton-dev/baton-controller',
      registryMirrors: { 'ghcr.io': registry.host },
    });
    await createDeployment(NS, 'unpulled', [{ name: 'controller', image: missing }]);
    type PodList = {
      items: { status?: { containerStatuses?: { state?: { waiting?: { reason?: string; message?: string } } }[] } }[];
    };
    const waiting = async () =>
      (
        await env.admin.call<PodList>(
          'GET',
          `/api/v1/namespaces/${NS}/pods?labelSelector=app.kubernetes.io%2Fname%3Dunpulled`,
        )
      ).items[0]?.status?.containerStatuses?.[0]?.state?.waiting;
    await eventually(async () => (await waiting())?.reason === 'ErrImagePull', 60_000, 'ErrImagePull', 500);
    expect((await waiting())?.message).toContain(
      `${registry.host}/baton-dev/baton-controller@sha256:${'0'.repeat(64)}`,
    );
    expect(runner.pods().filter((p) => p.name.startsWith('unpulled'))).toEqual([]);

    // What the takeover reads: the Deployment is not Available, and the reason names the pull that failed.
    const clients = clientsFromKubeconfigFile(env.cluster.kubeconfigPath);
    const state = await deploymentState(clients, NS, 'unpulled');
    expect(state.isAvailable).toBe(false);
    expect(state.reason).toMatch(/container controller ErrImagePull: failed to pull image .*not found/);
  });

  it('resolves env secretKeyRefs as a kubelet does: CreateContainerConfigError while the Secret or key is missing, then runs with its value', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'baton-secret-env-'));
    const out = join(dir, 'needed');
    // Its own runner: the previous test's (in `runner`, stopped by afterAll) still runs the controller's pod.
    const secretRunner = await startPodRunner({
      kubeconfigPath: env.cluster.kubeconfigPath,
      imagePrefix: 'example.test/needs-secret',
      // The process writes what it got and stays up, as a container that started would.
      command: ['/bin/sh', '-c', 'printf %s "$NEEDED" > "$OUT"; exec sleep 300', 'sh'],
      localProcess: () => ({ args: [], env: { OUT: out } }),
    });
    // A namespace of its own: this test does not depend on the others' push.
    const ns = 'secret-env';
    try {
      await env.admin.call('POST', '/api/v1/namespaces', {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: ns },
      });
      await createDeployment(ns, 'needs-secret', [
        {
          name: 'app',
          image: 'example.test/needs-secret:1',
          env: [
            { name: 'NEEDED', valueFrom: { secretKeyRef: { name: 'needed', key: 'value' } } },
            { name: 'SKIPPED', valueFrom: { secretKeyRef: { name: 'absent', key: 'k', optional: true } } },
          ],
        },
      ]);
      const clients = clientsFromKubeconfigFile(env.cluster.kubeconfigPath);
      const reason = async () => (await deploymentState(clients, ns, 'needs-secret')).reason;
      await eventually(
        async () => (await reason()).includes('CreateContainerConfigError: secret "needed" not found'),
        60_000,
        'CreateContainerConfigError for the missing Secret',
        500,
      );
      expect(secretRunner.pods()).toEqual([]);

      await putSecret(env.admin, ns, 'needed', { other: 'x' });
      await eventually(
        async () =>
          (await reason()).includes(`CreateContainerConfigError: couldn't find key value in Secret ${ns}/needed`),
        30_000,
        'CreateContainerConfigError for the missing key',
        500,
      );
      expect(secretRunner.pods()).toEqual([]);

      await putSecret(env.admin, ns, 'needed', { other: 'x', value: 'from-the-secret' });
      await eventually(
        async () => (await readFile(out, 'utf8').catch(() => '')) === 'from-the-secret',
        30_000,
        'the process to start with the Secret value',
        500,
      );
      expect(secretRunner.pods().map((p) => p.name)).toEqual([expect.stringMatching(/^needs-secret-/)]);
      // Running and Ready again, as the kubelet reports a container that started: the Deployment becomes Available.
      await eventually(
        async () => (await deploymentState(clients, ns, 'needs-secret')).isAvailable,
        60_000,
        'the Deployment to become Available',
        500,
      );
    } finally {
      await secretRunner.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
