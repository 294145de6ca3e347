import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readEntries, writeSigningKeyPair } from '@baton/audit';
import { loadHandoffPlan, runHandoff } from '@baton/core';
import { clientsFromKubeconfigFile, findBootstrapLeftovers, type KubeObject, readObject } from '@baton/kube';
import { writeFleetFile } from '@baton/testbed';
import {
  ARGOCD_IMAGES,
  ARGOCD_REDIS_UNSIGNED,
  ARGOCD_REPO_SECRET,
  type ArgoCd,
  type ArgoCdSide,
  ensureArgoCd,
  startArgoCdBed,
} from '@baton/testenv/beds';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { fleetUp } from '../../support/fleet-env.js';
import {
  gitopsHandoffSuite,
  greetingCommit,
  planned,
  readAs,
  type SideRow,
  useBed,
} from '../../support/gitops-suite.js';
import { JWT_PATTERN, testHandoffDeps } from '../../support/handoff-run.js';
import { adminClients, confinementsLeft, eventually } from '../../support/kube.js';

// A handoff to real Argo CD on the bed's real node (the application controller, repo-server and redis as containers
// from images built here: the slim Argo CD binary from Go modules, Debian's git and redis-server) through baton's
// engine: the confined bootstrap credential pushes the minimal bootstrap-manifests/argocd, Argo CD syncs the root
// Application from a real Git server and takes over what Git carries, the credential is revoked and the revocation
// proven. Takeover is the profile's rules (rules/profile.yaml). The table's assertions (test/support/gitops-suite.ts),
// then Argo CD's own: the confinement of its large CRD, `baton fleet up`, and the rest of its install from Git.
const ROOT = new URL('../../../', import.meta.url).pathname;
const ARGOCD_DIR = join(ROOT, 'bootstrap-manifests/argocd');

let argocd: ArgoCd | undefined;

const ARGO_APP = { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application' } as const;

const ARGOCD_ROW: SideRow<ArgoCdSide> = {
  profile: 'argocd',
  controller: 'Argo CD',
  build: async () => {
    // A cold machine builds Argo CD here (7 to 12 minutes on 2 cores, with GOTOOLCHAIN=go1.27.3).
    argocd = await ensureArgoCd();
  },
  startBed: (o = {}) => {
    if (!argocd) throw new Error('Argo CD is not built (the suite builds it before any bed)');
    return startArgoCdBed({
      profileDir: ARGOCD_DIR,
      argocd,
      writeAuditKeys: (paths) => writeSigningKeyPair({ ...paths, name: 'baton-argocd-e2e' }),
      ...o,
    });
  },
  revisionSeen: (revision) => revision,
  // Upstream's redis is not signed: the plans' rule lets it through, and the audit event says so.
  unsigned: { [ARGOCD_IMAGES.redis]: ARGOCD_REDIS_UNSIGNED },
  owned: [
    'AppProject/argocd/default',
    'Application/argocd/root',
    'ConfigMap/argocd/argocd-cm',
    'ConfigMap/argocd/argocd-cmd-params-cm',
    'ConfigMap/argocd/argocd-rbac-cm',
    'Deployment/argocd/argocd-redis',
    'Deployment/argocd/argocd-repo-server',
    'Namespace/argocd',
    'Service/argocd/argocd-redis',
    'Service/argocd/argocd-repo-server',
    'ServiceAccount/argocd/argocd-application-controller',
    'ServiceAccount/argocd/argocd-redis',
    'ServiceAccount/argocd/argocd-repo-server',
    'StatefulSet/argocd/argocd-application-controller',
  ],
  pushOnly: [
    'ClusterRole/argocd-reconciler',
    'ClusterRoleBinding/argocd-reconciler',
    'CustomResourceDefinition/applications.argoproj.io',
    'CustomResourceDefinition/appprojects.argoproj.io',
    'Role/argocd/argocd-application-controller',
    'RoleBinding/argocd/argocd-application-controller',
    'Secret/argocd/argocd-redis',
    'Secret/argocd/argocd-secret',
    `Secret/argocd/${ARGOCD_REPO_SECRET}`,
  ],
  image: {
    repository: 'quay.io/argoproj/argocd',
    pods: {
      namespace: 'argocd',
      name: 'argocd-application-controller',
      labelSelector: 'app.kubernetes.io/name=argocd-application-controller',
    },
  },
  expectOwnStatus: async (bed, admin) => {
    // Argo CD's own status, read independently of baton: Synced at the commit, Healthy, applied server-side.
    const app = await readAs<{
      status?: { sync?: { status?: string; revision?: string }; health?: { status?: string } };
    }>(admin, { ...ARGO_APP, metadata: { name: 'root', namespace: 'argocd' } });
    expect(app?.status?.sync).toMatchObject({ status: 'Synced', revision: bed.side.revision });
    expect(app?.status?.health?.status).toBe('Healthy');
    const sts = await admin.apps.readNamespacedStatefulSet({
      namespace: 'argocd',
      name: 'argocd-application-controller',
    });
    expect(sts.metadata?.managedFields?.some((f) => f.manager === 'argocd-controller' && f.operation === 'Apply')).toBe(
      true,
    );
    const demo = await admin.core.readNamespacedConfigMap({ namespace: 'argocd-demo', name: 'web-config' });
    expect(demo.data?.greeting).toBe('hello from git');
  },
  laterCommit: greetingCommit('apps/demo.yaml', 'argocd-demo'),
  selfHeal: {
    object: { apiVersion: 'v1', kind: 'Service', metadata: { namespace: 'argocd', name: 'argocd-repo-server' } },
    label: 'app.kubernetes.io/component',
    value: 'repo-server',
  },
  pollMs: 1000,
  wrongPassword: {
    takeoverTimeoutSeconds: 60,
    expectFailure: async (s, _bed, admin) => {
      expect(s.error).toContain('Application/argocd/root');
      // baton quotes the Application's ComparisonError. Argo CD keeps its first one when later comparisons fail
      // against the repository too (controller/appcontroller.go: "Ignoring temporary failed attempt to compare app
      // state against repo"), so when its controller compared before the repo-server listened (a race on a real
      // node), the condition, and the quote (cut to its first line's length), stay that first "connection refused".
      expect(s.error).toMatch(
        /ComparisonError: .*(authentication required|Error while dialing: dial tcp [0-9.]+:8081)/,
      );
      // Either way the repo-server met the wrong password: it says so in its own log, read through the apiserver.
      const [repoServer] = (
        await admin.core.listNamespacedPod({
          namespace: 'argocd',
          labelSelector: 'app.kubernetes.io/name=argocd-repo-server',
        })
      ).items;
      const repoLog = await admin.core.readNamespacedPodLog({
        namespace: 'argocd',
        name: repoServer!.metadata!.name!,
      });
      expect(repoLog).toContain('authentication required');
      expect(repoLog).not.toContain('not-the-git-password');
    },
  },
  rewrite: {
    secrets: [
      { namespace: 'argocd', name: ARGOCD_REPO_SECRET },
      { namespace: 'argocd', name: 'argocd-secret' },
    ],
    workloads: [
      { kind: 'Deployment', namespace: 'argocd', name: 'argocd-redis' },
      { kind: 'Deployment', namespace: 'argocd', name: 'argocd-repo-server' },
      { kind: 'StatefulSet', namespace: 'argocd', name: 'argocd-application-controller' },
    ],
  },
  attack: {
    // The push has not created the Application CRD yet, and a write of a kind the API does not serve is a 404 before
    // admission: install the CRD first (a cluster that had it already), so the thief's Application write reaches the
    // confinement, as it would once the push had created it.
    prepare: async (bed, loaded) => {
      const operator = adminClients(bed.kubeconfigPath);
      const crd = planned(bed.side, 'CustomResourceDefinition', 'applications.argoproj.io');
      // As the push's own field manager (an earlier, interrupted run of this handoff): the push applies over it.
      await operator.rest.apply(crd as never, { fieldManager: loaded.plan.push.fieldManager });
      await eventually(
        async () =>
          (await operator.objects.list('argoproj.io/v1alpha1', 'Application', 'argocd').then(
            () => true,
            () => false,
          )) === true,
        30_000,
        'the API to serve argoproj.io/v1alpha1 Applications',
        200,
      );
    },
    workload: {
      kind: 'StatefulSet',
      namespace: 'argocd',
      name: 'argocd-application-controller',
      image: 'quay.io/argoproj/argocd',
    },
    crd: 'applications.argoproj.io',
    binding: { name: 'argocd-reconciler', subjects: ['argocd/argocd-application-controller'] },
    secretNamespace: 'argocd',
    more: async (bed, { attempt, apply }) => {
      const root = planned(bed.side, 'Application', 'root');
      const source = (root.spec as { source: Record<string, unknown> }).source;
      await attempt("point the root Application's repoURL at another repository", () =>
        apply({
          ...root,
          spec: { ...(root.spec as object), source: { ...source, repoURL: 'https://git.example/attacker.git' } },
        }),
      );
    },
    expectMoreUntouched: async (bed, admin) => {
      const root = await readAs<{ spec: { source: { repoURL: string } } }>(admin, {
        ...ARGO_APP,
        metadata: { name: 'root', namespace: 'argocd' },
      });
      expect(root?.spec.source.repoURL).toBe(bed.side.git.repoUrl('cluster-config'));
    },
  },
  confinement: {
    title: 'the confinement held the Application CRD (416 KB) by its security-relevant fields and stayed under 256 KB',
    expect: (s) => {
      expect(s.confinement?.partlyPinned).toEqual(['CustomResourceDefinition/applications.argoproj.io']);
      expect(s.confinement?.policyBytes).toBeLessThanOrEqual(256 * 1024);
      // The rest of it was compared after the window closed.
      expect(s.confinement?.verifiedObjects).toBe(s.confinement?.allowed.length);
    },
  },
  afterPulumiUp: async (bed) => {
    // The stack's pushSecrets config reached the cluster: the Secrets Argo CD's pods read (kubelet starts none of them
    // without argocd-redis) hold the plan files' values.
    const admin = clientsFromKubeconfigFile(bed.kubeconfigPath);
    for (const name of ['argocd-redis', 'argocd-secret']) {
      const want = parseAllDocuments(readFileSync(join(bed.side.dir, `${name}.yaml`), 'utf8'))[0]!.toJS() as Record<
        string,
        string
      >;
      const got = (await admin.core.readNamespacedSecret({ name, namespace: 'argocd' })).data ?? {};
      expect(
        Object.fromEntries(Object.entries(got).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()])),
        name,
      ).toEqual(want);
    }
  },
};

gitopsHandoffSuite(ARGOCD_ROW);

describe('through `baton fleet up` (a fleet of one whose plan template is the Argo CD plan)', () => {
  const bedOf = useBed(ARGOCD_ROW);

  it('hands the cluster to Argo CD: exit 0, one handoff event via fleet naming profile argocd, nothing left', async () => {
    const bed = bedOf();
    const file = writeFleetFile(join(bed.side.dir, 'fleet.yaml'), {
      template: bed.side.planPath,
      clusters: [{ name: bed.clusterName, kubeconfigPath: bed.kubeconfigPath }],
      waves: [{}],
      concurrency: 1,
      failureBudget: 0,
    });
    const r = await fleetUp(['-f', file]);
    expect(r.code, r.stderr.slice(-3000)).toBe(0);
    expect(r.result.waves.flatMap((w) => w.clusters).map((c) => [c.name, c.status])).toEqual([
      [bed.clusterName, 'handed-off'],
    ]);
    const handoffs = [];
    for await (const e of readEntries(bed.side.auditLogPath))
      if ('plan' in e.statement.predicate) handoffs.push(e.statement.predicate);
    expect(handoffs.map((e) => [e.outcome, e.actor.via, e.plan.push.profile, e.readiness?.reconciledRevision])).toEqual(
      [['handed-off', 'fleet', 'argocd', bed.side.revision]],
    );
    expect(await findBootstrapLeftovers(clientsFromKubeconfigFile(bed.kubeconfigPath), 'baton-system')).toEqual([]);
    expect(await confinementsLeft(adminClients(bed.kubeconfigPath))).toEqual([]);
    expect(r.stdout + r.stderr).not.toMatch(JWT_PATTERN);
    for (const secret of bed.side.secretValues) expect(r.stdout + r.stderr).not.toContain(secret);
  }, 420_000);
});

describe('with controller.privilege: cluster-admin, the rest of Argo CD’s install comes from Git', () => {
  const bedOf = useBed(ARGOCD_ROW, { privilege: 'cluster-admin' });

  it('hands off, recording the privilege; Argo CD then applies and owns upstream’s argocd-server, dex, notifications, ApplicationSet and NetworkPolicies', async () => {
    const bed = bedOf();
    const loaded = loadHandoffPlan(bed.side.planPath);
    const { deps } = testHandoffDeps(loaded, bed.kubeconfigPath);
    const s = await runHandoff(loaded, deps);
    // The takeover waits for the root Application Synced at the commit and Healthy: the rest synced with it.
    expect(s.outcome, s.error).toBe('handed-off');
    const events = [];
    for await (const e of readEntries(bed.side.auditLogPath)) events.push(e.statement.predicate);
    expect(events.map((e) => ('plan' in e ? [e.outcome, e.plan.pull.privilege] : []))).toEqual([
      ['handed-off', 'cluster-admin'],
    ]);
    const admin = clientsFromKubeconfigFile(bed.kubeconfigPath);
    const rest = bed.side.files['clusters/demo/argocd-rest/install.yaml']!;
    const objects = parseAllDocuments(rest)
      .map((d) => d.toJS() as KubeObject)
      .filter((o) => o?.kind);
    for (const want of [
      'Deployment/argocd-server',
      'Deployment/argocd-dex-server',
      'Deployment/argocd-notifications-controller',
      'Deployment/argocd-applicationset-controller',
      'CustomResourceDefinition/applicationsets.argoproj.io',
      'ClusterRole/argocd-server',
      'NetworkPolicy/argocd-server-network-policy',
    ])
      expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toContain(want);
    // Nothing the push carries is in it twice, and upstream's */*/* controller role is left out.
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).not.toContain(
      'StatefulSet/argocd-application-controller',
    );
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).not.toContain(
      'ClusterRole/argocd-application-controller',
    );
    // The plan's Secrets stay push-only: upstream's empty argocd-secret would make Argo CD co-own the pushed one.
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).not.toContain('Secret/argocd-secret');
    const notOwned: string[] = [];
    for (const o of objects) {
      const live = await readObject(admin, {
        ...o,
        metadata: {
          ...o.metadata,
          ...(o.kind.startsWith('Cluster') || o.kind === 'CustomResourceDefinition' ? {} : { namespace: 'argocd' }),
        },
      });
      const managers = ((live?.metadata.managedFields ?? []) as { manager?: string }[]).map((m) => m.manager);
      if (!managers.includes('argocd-controller'))
        notOwned.push(`${o.kind}/${o.metadata.name}: ${live ? managers.join(',') : 'missing'}`);
    }
    expect(notOwned).toEqual([]);
  }, 420_000);
});
