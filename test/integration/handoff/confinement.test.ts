import { type HandoffStep, type HandoffSummary, loadManifestSet, runHandoff } from '@baton/core';
import { type KubeObject, probeToken } from '@baton/kube';
import { type BatonControllerEnv, createBatonControllerEnv } from '@baton/testbed';
import { type Cluster, startCluster } from '@baton/testenv';
import { type ApiException, PatchStrategy } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attacker, bootstrapServiceAccount, stealToken } from '../../support/attacker.js';
import { recordCompatMetrics } from '../../support/compat.js';
import { auditEventsBy, JWT_PATTERN, testHandoffDeps } from '../../support/handoff-run.js';
import { adminClients, confinementsLeft, eventually, statusOfCall } from '../../support/kube.js';

// An attacker who gets hold of the bootstrap identity during the push window (here: the operator requests a second
// token for the run's ServiceAccount) tries to plant lasting access against the real apiserver. RBAC alone allowed
// all four of the original attempts; the run's ValidatingAdmissionPolicy must refuse every write outside the plan,
// and every write at all once the push is complete.
let cluster: Cluster;
let env: BatonControllerEnv;
let summary: HandoffSummary;
const during: Record<string, { status: number; message: string }> = {};
const after: Record<string, { status: number; message: string }> = {};
let afterTokenStatus = 0;
let pushCompletedAt = 0;
let stolen = '';

beforeAll(async () => {
  cluster = await startCluster({ node: 'real' });
  env = await createBatonControllerEnv({ kubeconfigPath: cluster.kubeconfigPath, realNode: cluster.realNode });
  const admin = adminClients(cluster.kubeconfigPath);
  const { deps, captured } = testHandoffDeps(env.loaded, cluster.kubeconfigPath, {
    onStep: async (step: HandoffStep) => {
      if (step !== 'push' && step !== 'takeover') return;
      const bootstrap = await bootstrapServiceAccount(admin);
      if (step === 'push') {
        stolen = await stealToken(admin, 'baton-system', bootstrap);
        Object.assign(during, await attack(stolen, bootstrap, 'during'));
      } else {
        pushCompletedAt = Date.now();
        // After the push, while the token still authenticates (the API server's cache, or the stolen token): once the
        // close has deleted the identity's bindings, which the attack's last attempt asserts.
        await untilRefusedByRbac(stolen);
        Object.assign(after, await attack(stolen, bootstrap, 'after'));
        afterTokenStatus = await probeToken(deps.operator, stolen);
      }
    },
  });
  summary = await runHandoff(env.loaded, deps);
  recordCompatMetrics('confinement', summary);
  expect(captured.text()).not.toContain(stolen);
}, 600_000);

afterAll(async () => {
  await env?.stop();
  await cluster?.stop();
});

/** Every attempt the plan does not allow, and (during the window) one the plan does allow, as the bootstrap identity. */
async function attack(token: string, bootstrapName: string, phase: 'during' | 'after') {
  const { c, out, attempt, apply } = attacker(cluster.kubeconfigPath, token);
  await attempt('bind the controller ClusterRole to system:authenticated', () =>
    c.rbac.createClusterRoleBinding({
      body: {
        metadata: { name: 'backdoor' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'baton-controller' },
        subjects: [{ kind: 'Group', name: 'system:authenticated', apiGroup: 'rbac.authorization.k8s.io' }],
      },
    }),
  );
  await attempt('rewrite the planned ClusterRoleBinding to bind system:authenticated', () =>
    apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'baton-controller', labels: { 'app.kubernetes.io/name': 'baton-controller' } },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'baton-controller' },
      subjects: [{ kind: 'Group', name: 'system:authenticated', apiGroup: 'rbac.authorization.k8s.io' }],
    }),
  );
  await attempt('apply ClusterRole baton-controller with */*/*', () =>
    apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'baton-controller', labels: { 'app.kubernetes.io/name': 'baton-controller' } },
      rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
    }),
  );
  await attempt('create a non-expiring token Secret for the controller ServiceAccount', () =>
    c.core.createNamespacedSecret({
      namespace: 'baton-system',
      body: {
        metadata: {
          name: 'controller-token',
          annotations: { 'kubernetes.io/service-account.name': 'baton-controller' },
        },
        type: 'kubernetes.io/service-account-token',
      },
    }),
  );
  await attempt('create Deployment baton-system/other running as the controller', () =>
    c.apps.createNamespacedDeployment({
      namespace: 'baton-system',
      body: {
        metadata: { name: 'other' },
        spec: {
          selector: { matchLabels: { app: 'other' } },
          template: {
            metadata: { labels: { app: 'other' } },
            spec: { serviceAccountName: 'baton-controller', containers: [{ name: 'c', image: 'evil:1' }] },
          },
        },
      },
    }),
  );
  await attempt('bind cluster-admin directly', () =>
    c.rbac.createClusterRoleBinding({
      body: {
        metadata: { name: 'admin-me' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ kind: 'ServiceAccount', name: bootstrapName, namespace: 'baton-system' }],
      },
    }),
  );
  await attempt('a ServiceAccount named like a planned Secret (planned name, other kind)', () =>
    c.core.createNamespacedServiceAccount({ namespace: 'baton-system', body: { metadata: { name: 'baton-webhook' } } }),
  );
  await attempt('apply a planned object with another field manager', () => apply(PLANNED_SA, 'kubectl'));
  const deployment = plannedDeployment();
  const containers = (deployment.spec as { template: { spec: { containers: Record<string, unknown>[] } } }).template
    .spec.containers;
  await attempt("patch the controller Deployment's image", () =>
    apply({ ...deployment, spec: withPod(deployment, { containers: [{ ...containers[0], image: 'evil@sha256:1' }] }) }),
  );
  await attempt("patch the controller Deployment's ServiceAccount", () =>
    apply({ ...deployment, spec: withPod(deployment, { serviceAccountName: 'default' }) }),
  );
  await attempt('add a privileged hostPath container to the controller Deployment', () =>
    apply({
      ...deployment,
      spec: withPod(deployment, {
        volumes: [...(podSpec(deployment).volumes ?? []), { name: 'host', hostPath: { path: '/' } }],
        containers: [
          ...containers,
          {
            name: 'sidecar',
            image: 'evil:1',
            securityContext: { privileged: true },
            volumeMounts: [{ name: 'host', mountPath: '/host' }],
          },
        ],
      }),
    }),
  );
  await attempt('delete a planned object', () =>
    c.core.deleteNamespacedServiceAccount({ namespace: 'baton-system', name: 'baton-controller' }),
  );
  if (phase === 'after') {
    await attempt('re-apply the planned ServiceAccount exactly (the push is over)', () => apply(PLANNED_SA));
  }
  return out;
}

/** A planned object exactly as planned. */
const PLANNED_SA: KubeObject = {
  apiVersion: 'v1',
  kind: 'ServiceAccount',
  metadata: {
    name: 'baton-controller',
    namespace: 'baton-system',
    labels: { 'app.kubernetes.io/name': 'baton-controller' },
  },
  automountServiceAccountToken: true,
};

/**
 * Waits until RBAC refuses `token` a dry-run re-apply of a planned object: the run's close has deleted the identity's
 * bindings (the closed policy alone refuses it earlier, with its own message).
 */
async function untilRefusedByRbac(token: string): Promise<void> {
  const { c } = attacker(cluster.kubeconfigPath, token);
  await eventually(
    async () => {
      try {
        await c.objects.patch(PLANNED_SA, undefined, 'All', 'baton-bootstrap', true, PatchStrategy.ServerSideApply);
        return false;
      } catch (err) {
        const e = err as ApiException<string>;
        return e.code === 403 && String(e.body).includes('cannot patch');
      }
    },
    30_000,
    'RBAC refusing the stolen token a re-apply of the plan',
  );
}

function plannedDeployment(): KubeObject {
  return loadManifestSet(env.loaded.plan).objects.find((m) => m.object.kind === 'Deployment')!.object;
}

function podSpec(d: KubeObject): { volumes?: unknown[] } {
  return (d.spec as { template: { spec: { volumes?: unknown[] } } }).template.spec;
}

function withPod(d: KubeObject, pod: Record<string, unknown>) {
  const spec = d.spec as { template: { metadata?: unknown; spec: Record<string, unknown> } };
  return { ...spec, template: { ...spec.template, spec: { ...spec.template.spec, ...pod } } };
}

const RBAC_REFUSED = new Set(['bind cluster-admin directly', 'delete a planned object']);

describe('the bootstrap credential is confined to the plan by the API server', () => {
  it('hands off with the confinement recorded: policy, plan digest, probe denied, a write window shorter than the life', () => {
    expect(summary.outcome, summary.error).toBe('handed-off');
    expect(summary.confinement).toMatchObject({
      policyName: summary.credential!.subject.split(':').at(-1),
      probeDenied: true,
    });
    expect(summary.confinement!.planDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(summary.confinement!.closedAt).not.toBeNull();
    expect(summary.confinement!.removedAt).not.toBeNull();
    const w = summary.credential!.writeWindowSeconds!;
    expect(w).toBeGreaterThan(0);
    expect(w).toBeLessThan(summary.credential!.liveSeconds);
    // Issue 18: the bindings go with the close, and the token itself was denied get on the planned Secrets.
    const p = summary.credential!.privilegeWindowSeconds!;
    expect(p).toBeGreaterThan(0);
    expect(p).toBeLessThan(summary.credential!.liveSeconds);
    expect(summary.confinement!.verifiedObjects).toBe(summary.confinement!.allowed.length);
    expect(JSON.stringify(summary)).not.toMatch(JWT_PATTERN);
  });

  it('refuses every attempt to plant access during the push window, naming the plan digest', () => {
    const digest = summary.confinement!.planDigest;
    expect(Object.keys(during)).toHaveLength(12);
    for (const [what, r] of Object.entries(during)) {
      expect(r.status, `${what}: ${r.message}`).toBe(403);
      // RBAC already refuses binding cluster-admin (no bind) and deletes (no delete); everything else RBAC allowed,
      // and the policy refused it.
      if (!RBAC_REFUSED.has(what)) expect(r.message, what).toContain(digest);
    }
  });

  it('refuses every write, even of the plan, after the push, while the token still authenticates', () => {
    expect(afterTokenStatus).toBe(201);
    expect(Object.keys(after)).toHaveLength(13);
    for (const [what, r] of Object.entries(after)) expect(r.status, what).toBe(403);
    // The bindings were deleted with the close: RBAC refuses before admission sees the write.
    // (The recorded message is the apiserver's JSON body, quotes escaped.)
    const reapplied = after['re-apply the planned ServiceAccount exactly (the push is over)']!.message;
    expect(reapplied).toContain(summary.credential!.subject);
    expect(reapplied).toContain('cannot patch');
  });

  it('the apiserver audit log shows the denials, and no allowed write by the identity after the write window', () => {
    const subject = summary.credential!.subject;
    const events = auditEventsBy(cluster.auditLogPath!, subject);
    const writes = events.filter((e) => ['create', 'update', 'patch', 'delete'].includes(e.verb));
    const denied = writes.filter((e) => e.responseStatus?.code === 403);
    expect(denied.length).toBeGreaterThanOrEqual(24);
    const closedAt = Date.parse(summary.confinement!.closedAt!);
    expect(closedAt).toBeLessThan(pushCompletedAt + 1000);
    const allowedAfter = writes.filter(
      (e) =>
        (e.responseStatus?.code ?? 0) < 400 &&
        Date.parse(e.stageTimestamp) > closedAt &&
        !['selfsubjectrulesreviews', 'selfsubjectreviews', 'selfsubjectaccessreviews'].includes(
          e.objectRef?.resource ?? '',
        ),
    );
    expect(allowedAfter.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
  });

  it('leaves no confinement and no bootstrap identity behind; the stolen token is dead too', async () => {
    expect(await confinementsLeft(adminClients(cluster.kubeconfigPath))).toEqual([]);
    const { operator } = testHandoffDeps(env.loaded, cluster.kubeconfigPath).deps;
    expect(await probeToken(operator, stolen)).toBe(401);
    const admin = adminClients(cluster.kubeconfigPath);
    expect(await statusOfCall(() => admin.rbac.readClusterRoleBinding({ name: 'backdoor' }))).toBe(404);
    expect(
      await statusOfCall(() => admin.apps.readNamespacedDeployment({ namespace: 'baton-system', name: 'other' })),
    ).toBe(404);
  });
});
