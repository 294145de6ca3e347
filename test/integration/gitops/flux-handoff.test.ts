import { join } from 'node:path';
import { readEntries, writeSigningKeyPair } from '@baton/audit';
import { type HandoffSummary, loadHandoffPlan } from '@baton/core';
import { clientsFromKubeconfigFile, type KubeObject, probeToken } from '@baton/kube';
import {
  ensureFluxControllers,
  FLUX_IMAGES,
  type FluxControllers,
  type FluxSide,
  fluxReleaseSigner,
  type HandoffBed,
  startFluxBed,
} from '@baton/testenv/beds';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AttemptResult, attacker } from '../../support/attacker.js';
import {
  expectRefusedByPlan,
  gitopsHandoffSuite,
  greetingCommit,
  handoffWithThief,
  planned,
  readAs,
  type SideRow,
} from '../../support/gitops-suite.js';
import { adminClients, statusOfCall } from '../../support/kube.js';

// A handoff to real Flux (source-controller + kustomize-controller built from Go modules, as containers on the bed's
// real node) through baton's engine: the confined bootstrap credential pushes bootstrap-manifests/flux, Flux takes
// over from a real Git server, the credential is revoked and the revocation proven. Takeover is the profile's rules
// (rules/profile.yaml). The table's assertions (test/support/gitops-suite.ts), then Flux's own: the cluster-admin choice.
const ROOT = new URL('../../../', import.meta.url).pathname;
const FLUX_DIR = join(ROOT, 'bootstrap-manifests/flux');

type Condition = { type: string; status: string; message?: string };

let flux: FluxControllers | undefined;

const managers = (o: { metadata: Record<string, unknown> } | undefined) =>
  ((o?.metadata.managedFields as { manager: string; operation: string }[] | undefined) ?? [])
    .filter((f) => f.operation === 'Apply')
    .map((f) => f.manager);

const FLUX_ROW: SideRow<FluxSide> = {
  profile: 'flux',
  controller: 'Flux',
  build: async () => {
    flux = await ensureFluxControllers();
  },
  startBed: (o = {}) => {
    if (!flux) throw new Error('Flux is not built (the suite builds it before any bed)');
    return startFluxBed({
      profileDir: FLUX_DIR,
      controllers: flux,
      writeAuditKeys: (paths) => writeSigningKeyPair({ ...paths, name: 'baton-flux-e2e' }),
      ...o,
    });
  },
  revisionSeen: (revision) => `main@sha1:${revision}`,
  owned: [
    'Deployment/flux-system/kustomize-controller',
    'Deployment/flux-system/source-controller',
    'GitRepository/flux-system/flux-system',
    'Kustomization/flux-system/flux-system',
    'Namespace/flux-system',
    'Service/flux-system/source-controller',
    'ServiceAccount/flux-system/kustomize-controller',
    'ServiceAccount/flux-system/source-controller',
  ],
  pushOnly: [
    'Secret/flux-system/flux-system',
    'ClusterRole/flux-reconciler',
    'ClusterRoleBinding/flux-reconciler',
    'Role/flux-system/flux-leader-election',
    ...[
      'buckets.source.toolkit.fluxcd.io',
      'externalartifacts.source.toolkit.fluxcd.io',
      'gitrepositories.source.toolkit.fluxcd.io',
      'helmcharts.source.toolkit.fluxcd.io',
      'helmrepositories.source.toolkit.fluxcd.io',
      'ocirepositories.source.toolkit.fluxcd.io',
      'kustomizations.kustomize.toolkit.fluxcd.io',
    ].map((n) => `CustomResourceDefinition/${n}`),
  ],
  image: {
    repository: FLUX_IMAGES.kustomizeController,
    pods: { namespace: 'flux-system', name: 'kustomize-controller', labelSelector: 'app=kustomize-controller' },
  },
  // Keyless, as upstream's: each controller's release workflow at its tag, from GitHub Actions' issuer.
  signedBy: (image) => {
    const [, repository, tag] = /^ghcr\.io\/([^:@]+):([^@]+)@/.exec(image) ?? [];
    const { subject, issuer } = fluxReleaseSigner(repository ?? '?', tag ?? '?');
    return `${subject} from ${issuer}`;
  },
  expectOwnStatus: async (bed, admin) => {
    // Flux's own status, read independently of baton: the Kustomization Ready on the declared commit.
    const ks = await readAs<{ status?: { lastAppliedRevision?: string; conditions?: Condition[] } }>(admin, {
      apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
      kind: 'Kustomization',
      metadata: { name: 'flux-system', namespace: 'flux-system' },
    });
    expect(ks?.status?.lastAppliedRevision).toBe(`main@sha1:${bed.side.revision}`);
    expect(ks?.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    const dep = await readAs<KubeObject>(admin, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'kustomize-controller', namespace: 'flux-system' },
    });
    expect(managers(dep)).toContain('kustomize-controller');
  },
  laterCommit: greetingCommit('apps.yaml', 'flux-demo'),
  selfHeal: {
    object: { apiVersion: 'v1', kind: 'Service', metadata: { namespace: 'flux-system', name: 'source-controller' } },
    label: 'control-plane',
    value: 'controller',
  },
  pollMs: 500,
  wrongPassword: {
    takeoverTimeoutSeconds: 40,
    expectFailure: async (s) => {
      expect(s.error).toContain('GitRepository/flux-system/flux-system condition Ready is False');
      expect(s.error).toContain('authentication required');
    },
  },
  rewrite: {
    secrets: [{ namespace: 'flux-system', name: 'flux-system' }],
    workloads: [
      { kind: 'Deployment', namespace: 'flux-system', name: 'source-controller' },
      { kind: 'Deployment', namespace: 'flux-system', name: 'kustomize-controller' },
    ],
  },
  attack: {
    workload: {
      kind: 'Deployment',
      namespace: 'flux-system',
      name: 'source-controller',
      image: FLUX_IMAGES.sourceController,
    },
    crd: 'gitrepositories.source.toolkit.fluxcd.io',
    binding: { name: 'flux-reconciler', subjects: ['flux-system/kustomize-controller'] },
    secretNamespace: 'flux-system',
    more: async (bed, { attempt, apply }) => {
      const service = planned(bed.side, 'Service', 'source-controller');
      await attempt('push the planned Service as a NodePort', () =>
        apply({ ...service, spec: { ...(service.spec as object), type: 'NodePort' } }),
      );
    },
    expectMoreUntouched: async (_bed, admin) => {
      const svc = await admin.core.readNamespacedService({ namespace: 'flux-system', name: 'source-controller' });
      expect(svc.spec?.type).toBe('ClusterIP');
    },
  },
};

gitopsHandoffSuite(FLUX_ROW);

describe('the cluster-admin choice, attacked with a stolen bootstrap token during the push', () => {
  let bed: HandoffBed<FluxSide>;
  let s: HandoffSummary;
  let stolen = '';
  const attempts: Record<string, AttemptResult> = {};

  beforeAll(async () => {
    bed = await FLUX_ROW.startBed({ privilege: 'cluster-admin' });
    const run = await handoffWithThief(bed, loadHandoffPlan(bed.side.planPath), attack);
    ({ summary: s, stolen } = run);
    Object.assign(attempts, run.attempts);
    expect(run.logText).not.toContain(stolen);
  }, 420_000);

  afterAll(async () => {
    await bed?.stop();
  });

  /** What a thief tries with a token that RBAC lets bind cluster-admin (the plan's choice needs `bind` on it). */
  async function attack(token: string) {
    const { c, out, attempt, apply } = attacker(bed.kubeconfigPath, token);
    const service = (spec: Record<string, unknown>): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'source-controller', namespace: 'flux-system' },
      spec: {
        selector: { app: 'source-controller' },
        ports: [{ name: 'http', port: 80, targetPort: 'http' }],
        ...spec,
      },
    });
    await attempt('bind cluster-admin to system:authenticated', () =>
      c.rbac.createClusterRoleBinding({
        body: {
          metadata: { name: 'backdoor' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
          subjects: [{ kind: 'Group', name: 'system:authenticated', apiGroup: 'rbac.authorization.k8s.io' }],
        },
      }),
    );
    await attempt('apply the planned cluster-admin binding with a second subject', () =>
      apply({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'flux-cluster-reconciler', labels: { 'app.kubernetes.io/part-of': 'flux' } },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [
          { kind: 'ServiceAccount', name: 'kustomize-controller', namespace: 'flux-system' },
          { kind: 'ServiceAccount', name: 'default', namespace: 'default' },
        ],
      }),
    );
    await attempt('push the planned Service with an external IP', () =>
      apply(service({ externalIPs: ['203.0.113.7'] })),
    );
    await attempt('push the planned Service headless', () => apply(service({ clusterIP: 'None' })));
    return out;
  }

  it('refuses every attempt, naming the plan digest, and still hands off with cluster-admin recorded', async () => {
    expect(Object.keys(attempts)).toHaveLength(4);
    expectRefusedByPlan(attempts, s.confinement!.planDigest);
    expect(s.outcome, s.error).toBe('handed-off');
    const admin = adminClients(bed.kubeconfigPath);
    expect(await statusOfCall(() => admin.rbac.readClusterRoleBinding({ name: 'backdoor' }))).toBe(404);
    const binding = await admin.rbac.readClusterRoleBinding({ name: 'flux-cluster-reconciler' });
    expect(binding.subjects?.map((x) => `${x.namespace}/${x.name}`)).toEqual(['flux-system/kustomize-controller']);
    const svc = await admin.core.readNamespacedService({ namespace: 'flux-system', name: 'source-controller' });
    expect(svc.spec?.type).toBe('ClusterIP');
    expect(svc.spec?.clusterIP).not.toBe('None');
    expect(svc.spec?.externalIPs ?? []).toEqual([]);
    const events = [];
    for await (const e of readEntries(bed.side.auditLogPath)) events.push(e.statement.predicate);
    expect(events.map((e) => [e.outcome, e.plan.pull.privilege])).toEqual([['handed-off', 'cluster-admin']]);
    expect(await probeToken(clientsFromKubeconfigFile(bed.kubeconfigPath), stolen)).toBe(401);
  });
});
