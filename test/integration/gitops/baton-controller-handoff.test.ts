import { readFileSync } from 'node:fs';
import { writeSigningKeyPair } from '@baton/audit';
import { BATON_SOURCE_URI, IMAGE_BUILDER_ID } from '@baton/image';
import type { KubeClients, KubeObject } from '@baton/kube';
import { BATON_CONTROLLER_PROFILE } from '@baton/testbed';
import { type BatonControllerSide, type HandoffBed, startHandoffBed } from '@baton/testenv/beds';
import { CONTROLLER_IMAGE } from '@baton/testenv/images';
import { expect } from 'vitest';
import { gitopsHandoffSuite, readAs, type SideRow } from '../../support/gitops-suite.js';
import { statusOfCall } from '../../support/kube.js';

// The table's assertions (test/support/gitops-suite.ts) on baton's own controller: its image, pinned by digest, runs
// on the bed's real node with in-cluster config and takes itself over from the Git server; its container is hardened
// as the kernel sees it. Its sync behaviour is tested in test/integration/controller.
type Condition = { type: string; status: string; message?: string };

const GITSYNC = { apiVersion: 'baton.dev/v1alpha1', kind: 'GitSync' } as const;

const BATON_CONTROLLER_ROW: SideRow<BatonControllerSide> = {
  profile: 'baton-controller',
  controller: 'baton-controller',
  // The bed's plans ask for the provenance the image build attaches (this checkout's commit, as a release's).
  provenance: { builder: IMAGE_BUILDER_ID, source: BATON_SOURCE_URI },
  // Its image is built by setup (`pnpm image:build`) and pinned in the profile; the bed pushes it to its registry.
  build: async () => {},
  startBed: (o = {}) => {
    if (o.privilege) throw new Error('the baton-controller profile has no privilege choice');
    return startHandoffBed({
      profileDir: BATON_CONTROLLER_PROFILE,
      writeAuditKeys: (paths) => writeSigningKeyPair({ ...paths, name: 'baton-controller-e2e' }),
      ...(o.pullPassword ? { pullPassword: o.pullPassword } : {}),
      ...(o.takeoverTimeoutSeconds ? { takeoverTimeoutSeconds: o.takeoverTimeoutSeconds } : {}),
    });
  },
  revisionSeen: (revision) => revision,
  // The controller manages itself: everything Git carries, its CRD and RBAC included.
  owned: [
    'ClusterRole/baton-controller',
    'ClusterRoleBinding/baton-controller',
    'CustomResourceDefinition/gitsyncs.baton.dev',
    'Deployment/baton-system/baton-controller',
    'GitSync/baton-system/baton-controller',
    'Namespace/baton-system',
    'Role/baton-system/baton-controller',
    'RoleBinding/baton-system/baton-controller',
    'ServiceAccount/baton-system/baton-controller',
  ],
  pushOnly: ['Secret/baton-system/baton-pull-credential', 'Secret/baton-system/baton-webhook'],
  image: {
    repository: CONTROLLER_IMAGE,
    pods: {
      namespace: 'baton-system',
      name: 'baton-controller',
      labelSelector: 'app.kubernetes.io/name=baton-controller',
    },
  },
  expectOwnStatus: async (bed, admin) => {
    // The GitSync's own status, read independently of baton: applied at the commit, Ready.
    const gs = await readAs<{ status?: { lastAppliedRevision?: string; conditions?: Condition[] } }>(admin, {
      ...GITSYNC,
      metadata: { name: 'baton-controller', namespace: 'baton-system' },
    });
    expect(gs?.status?.lastAppliedRevision).toBe(bed.side.revision);
    expect(gs?.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    const dep = await readAs<KubeObject>(admin, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'baton-controller', namespace: 'baton-system' },
    });
    const managers = ((dep?.metadata.managedFields ?? []) as { manager?: string; operation?: string }[])
      .filter((f) => f.operation === 'Apply')
      .map((f) => f.manager);
    expect(managers).toContain('baton-controller');
    await expectHardenedController(bed, admin);
  },
  // Git carries only the controller's own install: the later commit labels its ServiceAccount.
  laterCommit: {
    file: 'baton-controller/10-serviceaccount.yaml',
    edit: (text) =>
      text.replace(
        '    app.kubernetes.io/name: baton-controller\n',
        '    app.kubernetes.io/name: baton-controller\n    baton.dev/commit: later\n',
      ),
    applied: async (admin) =>
      (await admin.core.readNamespacedServiceAccount({ namespace: 'baton-system', name: 'baton-controller' })).metadata
        ?.labels?.['baton.dev/commit'] === 'later',
  },
  selfHeal: {
    object: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { namespace: 'baton-system', name: 'baton-controller' },
    },
    label: 'app.kubernetes.io/name',
    value: 'baton-controller',
  },
  pollMs: 500,
  wrongPassword: {
    takeoverTimeoutSeconds: 40,
    expectFailure: async (s) => {
      expect(s.error).toContain('GitSync/baton-system/baton-controller');
      expect(s.error).toMatch(/AuthenticationFailed|authentication/i);
    },
  },
  rewrite: {
    secrets: [{ namespace: 'baton-system', name: 'baton-pull-credential' }],
    workloads: [{ kind: 'Deployment', namespace: 'baton-system', name: 'baton-controller' }],
  },
  attack: {
    workload: { kind: 'Deployment', namespace: 'baton-system', name: 'baton-controller', image: CONTROLLER_IMAGE },
    crd: 'gitsyncs.baton.dev',
    binding: { name: 'baton-controller', subjects: ['baton-system/baton-controller'] },
    secretNamespace: 'baton-system',
    // RBAC lets the identity create bindings (a create cannot be narrowed to a name) and bind the controller's role,
    // which it pushes: only the confinement stands between a thief and the controller's cluster-wide rights.
    more: async (_bed, { c, attempt }) => {
      await attempt("bind the controller's ClusterRole to another ServiceAccount", () =>
        c.rbac.createClusterRoleBinding({
          body: {
            metadata: { name: 'baton-thief-binding' },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'baton-controller' },
            subjects: [{ kind: 'ServiceAccount', name: 'default', namespace: 'default' }],
          },
        }),
      );
    },
    expectMoreUntouched: async (_bed, admin) => {
      expect(await statusOfCall(() => admin.rbac.readClusterRoleBinding({ name: 'baton-thief-binding' }))).toBe(404);
    },
  },
  // Each on a bed of its own, with the row's assertions and more (the stale lock, the confinement left by the killed
  // run; preview, refresh, replace and destroy around the `pulumi up`).
  provenElsewhere: {
    killRerun: 'test/integration/handoff/resume.test.ts',
    pulumiUp: 'test/integration/pulumi/handoff.test.ts',
  },
};

gitopsHandoffSuite(BATON_CONTROLLER_ROW);

/**
 * The controller's container, as the kernel sees it: started by the real kubelet from the pinned digest, as 65532,
 * with no capabilities, no new privileges, seccomp filtering (RuntimeDefault) and a read-only root.
 */
async function expectHardenedController(bed: HandoffBed<BatonControllerSide>, admin: KubeClients): Promise<void> {
  const pods = await admin.core.listNamespacedPod({
    namespace: 'baton-system',
    labelSelector: 'app.kubernetes.io/name=baton-controller',
  });
  const running = pods.items.filter((p) => p.status?.phase === 'Running');
  expect(running).toHaveLength(1);
  const status = running[0]!.status!.containerStatuses![0]!;
  expect(status.imageID).toBe(bed.side.controllerImage);
  expect(status.containerID).toMatch(/^containerd:\/\//);
  const pid = bed.realNode!.containerPid(status.containerID!);
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
