import { readFile } from 'node:fs/promises';
import { type Cluster, startCluster } from '@baton/testenv';
import { ensurePulumiEngine, PULUMI_VERSIONS, type PulumiEnv } from '@baton/testenv/pulumi';
import * as k8s from '@pulumi/kubernetes';
import * as pulumi from '@pulumi/pulumi';
import type { Stack } from '@pulumi/pulumi/automation/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/kube.js';
import { inlineStack, isGone, kubeClients, kubeconfigText, pulumiEnv, storedState } from './pulumi-fixture.js';

const NS = 'pulumi-up';

/** Mutating requests (not dry runs) the Kubernetes provider sent, from the apiserver's audit log. */
async function providerWrites(auditLogPath: string): Promise<string[]> {
  const events = (await readFile(auditLogPath, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { verb: string; requestURI: string; userAgent?: string; stage?: string });
  return events
    .filter((e) => e.userAgent?.startsWith('pulumi-kubernetes/') && e.stage === 'ResponseComplete')
    .filter((e) => ['create', 'update', 'patch', 'delete', 'deletecollection'].includes(e.verb))
    .filter((e) => !e.requestURI.includes('dryRun=All'))
    .map((e) => `${e.verb} ${e.requestURI}`);
}

/** What the program declares; tests change it between runs. */
interface Spec {
  readonly replicas: number;
  readonly tier: string;
}

function program(spec: () => Spec) {
  return async () => {
    const { replicas, tier } = spec();
    const provider = new k8s.Provider('cluster', { kubeconfig: new pulumi.Config().requireSecret('kubeconfig') });
    const ns = new k8s.core.v1.Namespace('ns', { metadata: { name: NS, labels: { tier } } }, { provider });
    const cm = new k8s.core.v1.ConfigMap(
      'settings',
      { metadata: { namespace: ns.metadata.name, name: 'settings' }, data: { greeting: 'hello' } },
      { provider },
    );
    const labels = { app: 'web' };
    const deployment = new k8s.apps.v1.Deployment(
      'web',
      {
        metadata: { namespace: ns.metadata.name, name: 'web', labels: { tier } },
        spec: {
          replicas,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            // kwok runs no containers; the image is never pulled.
            spec: { containers: [{ name: 'web', image: 'registry.invalid/web:1' }] },
          },
        },
      },
      { provider },
    );
    return {
      namespace: ns.metadata.name,
      configMap: cm.metadata.name,
      greeting: cm.data.apply((d) => d.greeting),
      readyReplicas: deployment.status.readyReplicas,
    };
  };
}

// One cluster and one Pulumi environment for the file: a control plane takes seconds to start on 2 cores. kwok: the
// provider's own await logic is under test, with an image that no registry here serves (kwok marks its Pods Ready).
let cluster: Cluster;
let env: PulumiEnv;
let clients: ReturnType<typeof kubeClients>;
let kubeconfig: string;

beforeAll(async () => {
  [cluster] = await Promise.all([
    startCluster({ name: `pulumi-it-${process.pid}`, node: 'kwok' }),
    ensurePulumiEngine(),
  ]);
  clients = kubeClients(cluster.kubeconfigPath);
  kubeconfig = await kubeconfigText(cluster.kubeconfigPath);
  env = await pulumiEnv();
});

afterAll(async () => {
  await env?.cleanup();
  // Every process the engine started (CLI, provider, dynamic-provider host) is gone.
  expect(await env?.processes()).toEqual([]);
  await cluster?.stop();
});

describe('pulumi up of Kubernetes objects against the local control plane', () => {
  let stack: Stack;
  let spec: Spec = { replicas: 1, tier: 'a' };

  beforeAll(async () => {
    stack = await inlineStack(env, { stackName: 'dev', program: program(() => spec) });
    await stack.setConfig('kubeconfig', { value: kubeconfig, secret: true });
  });

  it('previews the plan without touching the cluster', async () => {
    const res = await stack.preview();
    // Stack, provider, Namespace, ConfigMap, Deployment.
    expect(res.changeSummary).toEqual({ create: 5 });
    expect(await isGone(() => clients.core.readNamespace({ name: NS }))).toBe(true);
    // The provider may read and dry-run, but sent no request that changes anything.
    expect(await providerWrites(cluster.auditLogPath!)).toEqual([]);
  });

  it('creates a Namespace, ConfigMap and Deployment that becomes Available', async () => {
    const res = await stack.up();
    expect(res.summary.result).toBe('succeeded');
    expect(res.summary.resourceChanges).toEqual({ create: 5 });
    expect(res.stdout.includes(cluster.caData)).toBe(false);
    expect(res.outputs.namespace?.value).toBe(NS);
    expect(res.outputs.configMap?.value).toBe('settings');
    expect(res.outputs.greeting?.value).toBe('hello');
    expect(res.outputs.readyReplicas?.value).toBe(1);

    const cm = await clients.core.readNamespacedConfigMap({ namespace: NS, name: 'settings' });
    expect(cm.data).toEqual({ greeting: 'hello' });
    const dep = await clients.apps.readNamespacedDeployment({ namespace: NS, name: 'web' });
    expect(dep.status?.conditions?.find((c) => c.type === 'Available')?.status).toBe('True');
    // The provider reports the stamped version to the API server (the audit log records its user agent).
    const audit = await readFile(cluster.auditLogPath!, 'utf8');
    expect(audit).toContain(`"userAgent":"pulumi-kubernetes/v${PULUMI_VERSIONS.kubernetes} (linux/amd64)`);
    // ...and the audit check of the preview test sees its writes.
    expect((await providerWrites(cluster.auditLogPath!)).length).toBeGreaterThan(0);
    // The kubeconfig went in as a secret: the stored state holds only ciphertext of it. (A boolean assertion,
    // so that a failure cannot print credentials.)
    expect((await storedState(env, 'baton-test', 'dev')).includes(cluster.caData)).toBe(false);
  });

  it('reports no changes on a second up', async () => {
    const res = await stack.up();
    expect(res.summary.resourceChanges).toEqual({ same: 5 });
  });

  it('updates in place when the program changes', async () => {
    const before = await clients.apps.readNamespacedDeployment({ namespace: NS, name: 'web' });
    spec = { replicas: 2, tier: 'b' };
    const res = await stack.up();
    expect(res.summary.resourceChanges).toEqual({ same: 3, update: 2 });
    // The provider's await ends once the rollout is Available, which a scale-up from 1 already is: the output is
    // the status at that moment (1 or 2); the cluster must then reach 2 ready replicas on its own.
    expect([1, 2]).toContain(res.outputs.readyReplicas?.value);
    await eventually(
      async () =>
        (await clients.apps.readNamespacedDeployment({ namespace: NS, name: 'web' })).status?.readyReplicas === 2,
      30_000,
      'Deployment web to have 2 ready replicas after the update',
    );
    const after = await clients.apps.readNamespacedDeployment({ namespace: NS, name: 'web' });
    expect(after.metadata?.uid).toBe(before.metadata?.uid);
    expect(after.spec?.replicas).toBe(2);
    expect((await clients.core.readNamespace({ name: NS })).metadata?.labels?.tier).toBe('b');
  });

  it('destroys everything it created', async () => {
    const res = await stack.destroy();
    expect(res.summary.resourceChanges).toEqual({ delete: 5 });
    expect(await isGone(() => clients.apps.readNamespacedDeployment({ namespace: NS, name: 'web' }))).toBe(true);
    expect(await isGone(() => clients.core.readNamespace({ name: NS }))).toBe(true);
    expect((await stack.exportStack()).deployment.resources?.length ?? 0).toBe(0);
  });
});

/** Inputs of a handoff-like step run by a dynamic provider: it writes a ConfigMap with its own Kubernetes client. */
interface StepInputs {
  readonly kubeconfig: string;
  readonly namespace: string;
  readonly name: string;
  readonly value: string;
}

// Runs in the dynamic-provider plugin process. It captures no module: `require` resolves @kubernetes/client-node
// there, from pnpm's layout (NODE_PATH set by createPulumiEnv's nodePath).
const stepProvider: pulumi.dynamic.ResourceProvider = {
  async create(inputs: StepInputs) {
    const client = require('@kubernetes/client-node') as typeof import('@kubernetes/client-node');
    const kc = new client.KubeConfig();
    kc.loadFromString(inputs.kubeconfig);
    await kc.makeApiClient(client.CoreV1Api).createNamespacedConfigMap({
      namespace: inputs.namespace,
      body: { metadata: { name: inputs.name }, data: { value: inputs.value } },
    });
    return { id: `${inputs.namespace}/${inputs.name}`, outs: inputs };
  },
  async delete(_id: string, outs: StepInputs) {
    const client = require('@kubernetes/client-node') as typeof import('@kubernetes/client-node');
    const kc = new client.KubeConfig();
    kc.loadFromString(outs.kubeconfig);
    await kc.makeApiClient(client.CoreV1Api).deleteNamespacedConfigMap({ namespace: outs.namespace, name: outs.name });
  },
};

class Step extends pulumi.dynamic.Resource {
  declare readonly value: pulumi.Output<string>;
  constructor(name: string, args: { [K in keyof StepInputs]: pulumi.Input<string> }) {
    super(stepProvider, name, { ...args, value: args.value }, { additionalSecretOutputs: ['kubeconfig'] });
  }
}

describe('a dynamic provider and the example stack on the real engine', () => {
  it("runs create and delete of a pulumi.dynamic.Resource under pnpm's layout", async () => {
    const stack = await inlineStack(env, {
      stackName: 'dynamic',
      program: async () => {
        const step = new Step('step', {
          kubeconfig: pulumi.secret(kubeconfig),
          namespace: 'default',
          name: 'handoff-step',
          value: 'done',
        });
        return { value: step.value };
      },
    });
    const up = await stack.up();
    expect(up.summary.resourceChanges).toEqual({ create: 2 });
    expect(up.outputs.value?.value).toBe('done');
    const cm = await clients.core.readNamespacedConfigMap({ namespace: 'default', name: 'handoff-step' });
    expect(cm.data).toEqual({ value: 'done' });
    expect((await storedState(env, 'baton-test', 'dynamic')).includes(cluster.caData)).toBe(false);

    const down = await stack.destroy();
    expect(down.summary.resourceChanges).toEqual({ delete: 2 });
    expect(
      await isGone(() => clients.core.readNamespacedConfigMap({ namespace: 'default', name: 'handoff-step' })),
    ).toBe(true);
  });

  it('runs stacks/example from a shell: preview, up, a second up, stack output, refresh and destroy through the CLI', async () => {
    const cwd = new URL('../../../stacks/example', import.meta.url).pathname;
    const stack = `shell-${process.pid}`;
    const run = (...args: string[]) => env.run([...args, '--stack', stack], { cwd, stack });
    const configMap = () => clients.core.readNamespacedConfigMap({ namespace: 'example-shell', name: 'greeting' });
    await env.run(['stack', 'init', stack], { cwd });
    try {
      await env.run(['config', 'set', '--secret', 'kubeconfig', '--stack', stack], { cwd, stack, input: kubeconfig });
      await run('config', 'set', 'namespace', 'example-shell');

      const preview = await run('preview', '--diff');
      expect(preview.stdout).toMatch(/\+ 4 to create/);
      expect(await isGone(configMap)).toBe(true);

      const up = await run('up', '--yes', '--skip-preview');
      expect(up.stdout).toMatch(/4 created/);
      expect((await configMap()).data).toEqual({ greeting: 'hello' });

      await run('up', '--yes', '--expect-no-changes');
      const outputs = JSON.parse((await run('stack', 'output', '--json')).stdout) as Record<string, string>;
      expect(outputs).toEqual({ namespace: 'example-shell', configMap: 'greeting', greeting: 'hello' });
      const refresh = await run('refresh', '--yes');
      expect(refresh.stdout).toMatch(/4 unchanged/);

      const destroy = await run('destroy', '--yes');
      expect(destroy.stdout).toMatch(/4 deleted/);
      expect(await isGone(() => clients.core.readNamespace({ name: 'example-shell' }))).toBe(true);
      // The kubeconfig's client key never reaches the engine's output.
      const key = /client-key-data: (\S+)/.exec(kubeconfig)?.[1];
      expect(key).toBeTruthy();
      for (const out of [preview, up, refresh, destroy]) expect(out.stdout + out.stderr).not.toContain(key!);
    } finally {
      // Also removes stacks/example/Pulumi.<stack>.yaml.
      await env.run(['stack', 'rm', '--yes', '--force', stack], { cwd });
    }
  });
});
