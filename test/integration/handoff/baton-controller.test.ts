import { readFileSync } from 'node:fs';
import { loadTrustedKeys, verifyLog } from '@baton/audit';
import { isOwnedBy, loadManifestSet, runHandoff } from '@baton/core';
import {
  clientsFromKubeconfigFile,
  expectedObjects,
  findBootstrapLeftovers,
  type KubeClients,
  type KubeObject,
  readObject,
  serverSideApply,
} from '@baton/kube';
import { type BatonControllerEnv, createBatonControllerEnv } from '@baton/testbed';
import { type Cluster, startCluster } from '@baton/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JWT_PATTERN, testHandoffDeps } from '../../support/handoff-run.js';

// End to end with baton's own controller on a real node: the push installs bootstrap-manifests/baton-controller,
// the real kubelet pulls its image by the pinned digest from the bed's registry and runs it with containerd and
// runc (in-cluster config: the mounted ServiceAccount token, the kubernetes Service), and the controller takes
// itself over from the Git server, which the Pod reaches at the node address.
let cluster: Cluster;
let env: BatonControllerEnv;

beforeAll(async () => {
  cluster = await startCluster({ node: 'real' });
  env = await createBatonControllerEnv({ kubeconfigPath: cluster.kubeconfigPath, realNode: cluster.realNode });
});

afterAll(async () => {
  await env?.stop();
  await cluster?.stop();
});

describe('baton up with baton-controller', () => {
  it('pushes the profile with the scoped token, waits for the GitSync revision and ownership, revokes and proves', async () => {
    const { loaded } = env;
    const { deps, captured } = testHandoffDeps(loaded, cluster.kubeconfigPath);
    const s = await runHandoff(loaded, deps);
    expect(s.outcome, s.error).toBe('handed-off');
    expect(s.takeover?.revisionSeen).toBe(env.revision);
    expect(s.takeover?.notTakenOver).toEqual([]);
    expect(s.takeover?.pushOnly).toEqual([
      'Secret/baton-system/baton-pull-credential',
      'Secret/baton-system/baton-webhook',
    ]);
    expect(s.proof).toMatchObject({ probeStatus: 401, tokenReviewAuthenticated: false });
    // What took over is the image the profile pins, pulled by that digest (not the sources under tsx).
    const deployment = loadManifestSet(loaded.plan).objects.find((m) => m.object.kind === 'Deployment')!
      .object as unknown as {
      spec: { template: { spec: { containers: { image: string }[] } } };
    };
    expect(env.controllerImage).toMatch(/^ghcr\.io\/baton-dev\/baton-controller@sha256:[0-9a-f]{64}$/);
    expect(deployment.spec.template.spec.containers[0]!.image).toBe(env.controllerImage);
    // The controller manages itself: every object from Git is applied by baton-controller.
    for (const m of loadManifestSet(loaded.plan).objects) {
      if (m.object.kind === 'Secret') continue;
      const live = await readObject(deps.operator, m.object);
      expect(
        isOwnedBy(live!, 'baton-controller', 'baton-bootstrap'),
        `${m.object.kind}/${m.object.metadata.name}`,
      ).toBe(true);
    }
    expect(await findBootstrapLeftovers(deps.operator, 'baton-system')).toEqual([]);
    await expectHardenedController(deps.operator);
    const verdict = await verifyLog(env.auditLogPath, await loadTrustedKeys(env.keysPath));
    expect(verdict).toMatchObject({ ok: true, entries: 1, failures: [] });
    const text = captured.text() + JSON.stringify(s);
    expect(text).not.toMatch(JWT_PATTERN);
    for (const secret of env.secretValues) expect(text).not.toContain(secret);
  });
});

/**
 * The controller's container, as the kernel sees it: started by the real kubelet from the pinned digest, as 65532,
 * with no capabilities, no new privileges, seccomp filtering (RuntimeDefault) and a read-only root.
 */
async function expectHardenedController(operator: KubeClients): Promise<void> {
  const pods = await operator.core.listNamespacedPod({
    namespace: 'baton-system',
    labelSelector: 'app.kubernetes.io/name=baton-controller',
  });
  const running = pods.items.filter((p) => p.status?.phase === 'Running');
  expect(running).toHaveLength(1);
  const status = running[0]!.status!.containerStatuses![0]!;
  expect(status.imageID).toBe(env.controllerImage);
  expect(status.containerID).toMatch(/^containerd:\/\//);
  const pid = cluster.realNode!.containerPid(status.containerID!);
  const proc = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(proc)?.[1]?.trim();
  expect(field('Uid')?.split(/\s+/)).toEqual(['65532', '65532', '65532', '65532']);
  expect(field('CapEff')).toBe('0000000000000000');
  expect(field('CapPrm')).toBe('0000000000000000');
  expect(field('NoNewPrivs')).toBe('1');
  expect(field('Seccomp')).toBe('2'); // SECCOMP_MODE_FILTER
  const root = readFileSync(`/proc/${pid}/mountinfo`, 'utf8')
    .split('\n')
    .map((l) => l.split(' '))
    .find((f) => f[4] === '/');
  expect(root?.[5]?.split(',')).toContain('ro');
}

describe("the push keeps a manifest's fields that client-node's models do not know", () => {
  it('applies and reads a CRD with its schema defaults, enum and x-kubernetes-* keys, and a dry run answers them too', async () => {
    const operator = clientsFromKubeconfigFile(cluster.kubeconfigPath);
    const widget = {
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
      properties: {
        size: { type: 'string', enum: ['small', 'large'], default: 'small' },
        replicas: { type: 'integer', default: 2 },
      },
    };
    const crd: KubeObject = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.test.baton.dev' },
      spec: {
        group: 'test.baton.dev',
        scope: 'Namespaced',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: widget } }],
      },
    };
    const schemaOf = (o: KubeObject | undefined) =>
      (o as unknown as { spec: { versions: { schema: { openAPIV3Schema: unknown } }[] } }).spec.versions[0]!.schema
        .openAPIV3Schema;
    const [dryRun] = await expectedObjects(operator, [crd], { fieldManager: 'baton-bootstrap' });
    expect(schemaOf(dryRun!.expected)).toEqual(widget);
    const [applied] = await serverSideApply(operator, [crd], { fieldManager: 'baton-bootstrap' });
    expect(schemaOf(applied)).toEqual(widget);
    expect(schemaOf(await readObject(operator, crd))).toEqual(widget);
  });
});
