import { readFile } from 'node:fs/promises';
import { type PodRunner, startPodRunner } from '@baton/testenv';
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

// No manual step: the push creates the controller's Deployment, kwok "runs" its pod, and testenv's
// pod runner acts as the kubelet for the controller image by starting main.ts with a token bound
// to that pod, for its ServiceAccount.
let env: ControllerEnv;
let runner: PodRunner | undefined;

beforeAll(async () => {
  env = await startEnv();
});

afterAll(async () => {
  await runner?.stop();
  await env?.stop();
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
    });

    await eventually(
      async () => (await gitSyncStatus(env.admin))?.lastAppliedRevision === sha,
      90_000,
      'the pod-run controller to apply the repository',
      500,
    );
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
});
