import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
  ensureFluxControllers,
  FLUX_IMAGES,
  type FluxControllers,
  type FluxSide,
  type HandoffBed,
  startFluxBed,
} from '@baton/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AttemptResult, attacker, stealToken } from '../../support/attacker.js';
import { recordCompatMetrics } from '../../support/compat.js';
import {
  auditEventsBy,
  bootstrapMints,
  JWT_PATTERN,
  killDuringPush,
  runBaton,
  testHandoffDeps,
} from '../../support/handoff-run.js';
import { adminClients, confinementsLeft, eventually, statusOfCall } from '../../support/kube.js';
import { expectPulumiHandoff } from '../../support/pulumi-handoff.js';
import { expectRewriteRepaired } from '../../support/tamper-repair.js';

// A handoff to real Flux (source-controller + kustomize-controller built from Go modules) through baton's engine:
// the confined bootstrap credential pushes bootstrap-manifests/flux, Flux takes over from a real Git server, the
// credential is revoked and the revocation proven. Takeover is the profile's rules (rules/profile.yaml).
const ROOT = new URL('../../../', import.meta.url).pathname;
const FLUX_DIR = join(ROOT, 'bootstrap-manifests/flux');
const _execFileAsync = promisify(execFile);

type Condition = { type: string; status: string; message?: string };

let flux: FluxControllers;

beforeAll(async () => {
  // A cold machine builds both controllers here (about 6 to 11 minutes on 2 cores); later runs reuse the cache.
  flux = await ensureFluxControllers();
}, 1_800_000);

function startBed(
  o: { pullPassword?: string; takeoverTimeoutSeconds?: number; privilege?: 'scoped' | 'cluster-admin' } = {},
) {
  return startFluxBed({
    profileDir: FLUX_DIR,
    controllers: flux,
    writeAuditKeys: (paths) => writeSigningKeyPair({ ...paths, name: 'baton-flux-e2e' }),
    ...o,
  });
}

const owners = (o: { metadata: Record<string, unknown> } | undefined) =>
  ((o?.metadata.managedFields as { manager: string; operation: string }[] | undefined) ?? [])
    .filter((f) => f.operation === 'Apply')
    .map((f) => f.manager);

describe('a handoff to real Flux', () => {
  let bed: HandoffBed<FluxSide>;
  let loaded: LoadedPlan;
  let admin: KubeClients;
  let s: HandoffSummary;
  let logText = '';

  beforeAll(async () => {
    bed = await startBed();
    loaded = loadHandoffPlan(bed.side.planPath);
    admin = clientsFromKubeconfigFile(bed.kubeconfigPath);
  }, 300_000);

  afterAll(async () => {
    await bed?.stop();
  });

  it('ends handed-off: Flux applied the commit, owns what Git carries; CRDs, RBAC and the pull Secret are push-only', async () => {
    const { deps, captured } = testHandoffDeps(loaded, bed.kubeconfigPath);
    s = await runHandoff(loaded, deps);
    recordCompatMetrics('flux', s);
    logText = captured.text();
    expect(s.outcome, s.error).toBe('handed-off');
    expect(s.takeover?.revisionSeen).toBe(`main@sha1:${bed.side.revision}`);
    expect(s.takeover?.notTakenOver).toEqual([]);
    expect([...(s.takeover?.ownedObjects ?? [])].sort()).toEqual(
      [
        'Deployment/flux-system/kustomize-controller',
        'Deployment/flux-system/source-controller',
        'GitRepository/flux-system/flux-system',
        'Kustomization/flux-system/flux-system',
        'Namespace/flux-system',
        'Service/flux-system/source-controller',
        'ServiceAccount/flux-system/kustomize-controller',
        'ServiceAccount/flux-system/source-controller',
      ].sort(),
    );
    const pushOnly = s.takeover?.pushOnly ?? [];
    expect(pushOnly).toContain('Secret/flux-system/flux-system');
    expect(pushOnly.filter((x) => x.startsWith('CustomResourceDefinition/'))).toHaveLength(7);
    expect(pushOnly).toEqual(
      expect.arrayContaining([
        'ClusterRole/flux-reconciler',
        'ClusterRoleBinding/flux-reconciler',
        'Role/flux-system/flux-leader-election',
      ]),
    );

    // Flux's own status, read independently of baton: both Ready on the declared commit.
    const want = `main@sha1:${bed.side.revision}`;
    const ks = (await readObject(admin, {
      apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
      kind: 'Kustomization',
      metadata: { name: 'flux-system', namespace: 'flux-system' },
    })) as { status?: { lastAppliedRevision?: string; conditions?: Condition[] } } | undefined;
    expect(ks?.status?.lastAppliedRevision).toBe(want);
    expect(ks?.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    const dep = await readObject(admin, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'kustomize-controller', namespace: 'flux-system' },
    });
    expect(owners(dep)).toContain('kustomize-controller');

    // Revoked and proven; nothing of the credential left; nothing secret in the log.
    expect(s.credential?.revokedAt).toBeTruthy();
    expect(s.proof).toMatchObject({ probeStatus: 401, tokenReviewAuthenticated: false });
    expect(await findBootstrapLeftovers(admin, 'baton-system')).toEqual([]);
    expect(await confinementsLeft(adminClients(bed.kubeconfigPath))).toEqual([]);
    expect(logText).not.toMatch(JWT_PATTERN);
    for (const secret of bed.side.secretValues) expect(logText).not.toContain(secret);
  }, 300_000);

  it('records the profile and the pull side’s privilege in the signed audit event', async () => {
    const events = [];
    for await (const e of readEntries(bed.side.auditLogPath)) events.push(e.statement.predicate);
    expect(events).toHaveLength(1);
    const e = events[0]!;
    expect(e.outcome).toBe('handed-off');
    expect(e.plan.push.profile).toBe('flux');
    expect(e.plan.push.profileDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(e.plan.pull.privilege).toBe('scoped');
    // The controller's image as the bed pins and its node ran it: kustomize-controller built here from the same
    // module as upstream's v1.9.6, by its local digest (upstream's cannot be pulled here).
    const pinned = bed.side.images[FLUX_IMAGES.kustomizeController]!;
    expect(pinned).toMatch(/^ghcr\.io\/fluxcd\/kustomize-controller:v1\.9\.6@sha256:[0-9a-f]{64}$/);
    expect(e.plan.push.controller.imageDigest).toBe(pinned.split('@')[1]);
    const pods = await admin.core.listNamespacedPod({
      namespace: 'flux-system',
      labelSelector: 'app=kustomize-controller',
    });
    expect(pods.items.map((p) => p.status?.containerStatuses?.[0]?.imageID)).toContain(
      `${FLUX_IMAGES.kustomizeController}@${pinned.split('@')[1]}`,
    );
    const { stdout } = await runBaton(['audit', 'verify', bed.side.auditLogPath, '--keys', bed.side.keysPath]);
    expect(stdout).toMatch(/verified|ok/i);
  });

  it('the apiserver saw the bootstrap identity write only inside its window, and nothing after the proof', () => {
    if (!bed.apiserverAuditLogPath) throw new Error('the test bed runs the apiserver with an audit log');
    const events = auditEventsBy(bed.apiserverAuditLogPath, s.credential!.subject);
    const at = (e: { requestReceivedTimestamp: string }) => Date.parse(e.requestReceivedTimestamp);
    const allowed = events.filter((e) => (e.responseStatus?.code ?? 0) < 300);
    const show = (e: (typeof events)[number]) => `${e.verb} ${e.requestURI} ${e.responseStatus?.code}`;
    // Reviews (who am I, what may I do) are answered, not stored: baton's own scope check and proof probe.
    const isReview = (e: (typeof events)[number]) => /^self\w+reviews$/.test(e.objectRef?.resource ?? '');
    const writes = allowed.filter(
      (e) =>
        ['create', 'patch', 'update', 'delete'].includes(e.verb) && !isReview(e) && !e.requestURI.includes('dryRun='),
    );
    // One stored write per planned object: the push applies each once.
    expect(writes.length).toBe(s.confinement!.allowed.length);
    const closed = Date.parse(s.confinement!.closedAt!);
    expect(writes.filter((e) => at(e) > closed).map(show)).toEqual([]);
    // Between the revocation and the proof, the apiserver's token cache still answers baton's probe; nothing else.
    const revoked = Date.parse(s.credential!.revokedAt!);
    expect(allowed.filter((e) => at(e) > revoked && !isReview(e)).map(show)).toEqual([]);
    expect(allowed.filter((e) => at(e) > Date.parse(s.proof!.provedAt)).map(show)).toEqual([]);
  });

  it('pull works after the push credential is gone: a later commit is applied by kustomize-controller', async () => {
    const app = `${bed.side.gitPath}/apps.yaml`;
    const next = await bed.side.git.commitFiles(
      'cluster-config',
      { [app]: bed.side.files[app]!.replace('hello from git', 'after the handoff') },
      'change greeting',
    );
    await eventually(
      async () => {
        const cm = (await readObject(admin, {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'web-config', namespace: 'flux-demo' },
        })) as { data?: Record<string, string> } | undefined;
        return cm?.data?.greeting === 'after the handoff';
      },
      120_000,
      `kustomize-controller to apply ${next.slice(0, 12)}`,
      500,
    );
  }, 150_000);

  it('a manual change to an object Flux manages is reverted by Flux', async () => {
    // A pushed object that Git carries too: Flux owns it now, and puts its content back.
    const path = { namespace: 'flux-system', name: 'source-controller' };
    await admin.core.patchNamespacedService({
      ...path,
      body: [{ op: 'replace', path: '/metadata/labels/control-plane', value: 'tampered' }],
    });
    expect((await admin.core.readNamespacedService(path)).metadata?.labels?.['control-plane']).toBe('tampered');
    await eventually(
      async () => (await admin.core.readNamespacedService(path)).metadata?.labels?.['control-plane'] === 'controller',
      120_000,
      'kustomize-controller to restore Service flux-system/source-controller from Git',
      500,
    );
  }, 150_000);
});

describe('a Flux that never becomes Ready', () => {
  let bed: HandoffBed<FluxSide>;
  let loaded: LoadedPlan;
  let admin: KubeClients;

  beforeAll(async () => {
    bed = await startBed({ pullPassword: 'not-the-git-password', takeoverTimeoutSeconds: 40 });
    loaded = loadHandoffPlan(bed.side.planPath);
    admin = clientsFromKubeconfigFile(bed.kubeconfigPath);
  }, 300_000);

  afterAll(async () => {
    await bed?.stop();
  });

  it('a wrong Git credential ends failed at takeover, revoked and proven, naming the GitRepository', async () => {
    const { deps } = testHandoffDeps(loaded, bed.kubeconfigPath);
    const s = await runHandoff(loaded, deps);
    expect(s.outcome).toBe('failed');
    expect(s.failedStep).toBe('takeover');
    expect(s.error).toContain('GitRepository/flux-system/flux-system condition Ready is False');
    expect(s.error).toContain('authentication required');
    expect(s.credential?.revokedAt).toBeTruthy();
    expect(s.proof).toMatchObject({ probeStatus: 401, tokenReviewAuthenticated: false });
    expect(await findBootstrapLeftovers(admin, 'baton-system')).toEqual([]);
    expect(await confinementsLeft(adminClients(bed.kubeconfigPath))).toEqual([]);
  }, 300_000);
});

describe('kill -9 mid-push', () => {
  let bed: HandoffBed<FluxSide>;
  let admin: KubeClients;
  const started = Date.now();

  beforeAll(async () => {
    bed = await startBed();
    admin = clientsFromKubeconfigFile(bed.kubeconfigPath);
  }, 300_000);

  afterAll(async () => {
    await bed?.stop();
  });

  it('kill -9 of baton up mid-push, then again: handed off to Flux, each run’s credential revoked', async () => {
    const killed = await killDuringPush(bed.side.planPath);
    expect(killed.signal).toBe('SIGKILL');
    const killedRunId = /"runId":"([^"]+)"/.exec(killed.stderr)?.[1] ?? '';
    expect((await findBootstrapLeftovers(admin, 'baton-system')).map((l) => l.runId)).toEqual([killedRunId]);

    const { stdout, stderr } = await runBaton(['up', '--plan', bed.side.planPath, '-o', 'json']);
    const s = JSON.parse(stdout) as HandoffSummary;
    expect(s.outcome, s.error).toBe('handed-off');
    expect(s.leftoversRemoved).toContain(`Secret/baton-system/baton-bootstrap-${killedRunId}`);
    expect(stdout + stderr).not.toMatch(JWT_PATTERN);
    expect(stdout + stderr).not.toContain(bed.side.git.credentials.password);
    expect(await findBootstrapLeftovers(admin, 'baton-system')).toEqual([]);
    expect(await confinementsLeft(adminClients(bed.kubeconfigPath))).toEqual([]);

    // Two runs, two credentials (one each; a killed run's token died with it and cannot be reused), both revoked.
    const mints = bootstrapMints(bed.apiserverAuditLogPath!, started);
    expect(mints).toHaveLength(2);
    const events = [];
    for await (const e of readEntries(bed.side.auditLogPath)) events.push(e.statement.predicate);
    expect(events.map((e) => [e.runId, e.outcome])).toEqual([
      [killedRunId, 'aborted'],
      [s.runId, 'handed-off'],
    ]);
    expect(events.every((e) => e.credential?.revokedAt)).toBe(true);
    expect(new Set(events.map((e) => e.credential?.fingerprint)).size).toBe(2);
    expect(readFileSync(bed.side.auditLogPath, 'utf8')).not.toContain(bed.side.git.credentials.password);
  }, 420_000);
});

describe('a Secret rewritten during the push window (issue 29)', () => {
  let bed: HandoffBed<FluxSide>;
  beforeAll(async () => {
    bed = await startBed();
  }, 300_000);

  afterAll(async () => {
    await bed?.stop();
  });

  it('is pushed again by a second confined identity and both controllers restarted on it; tampered, then a rerun hands off', async () => {
    await expectRewriteRepaired(bed, {
      secrets: [{ namespace: 'flux-system', name: 'flux-system' }],
      workloads: [
        { kind: 'Deployment', namespace: 'flux-system', name: 'source-controller' },
        { kind: 'Deployment', namespace: 'flux-system', name: 'kustomize-controller' },
      ],
    });
  }, 600_000);
});

describe("through `pulumi up` (stacks/local with profile flux: controllers.of('flux'), as controllers.flux() gives)", () => {
  let bed: HandoffBed<FluxSide>;

  beforeAll(async () => {
    bed = await startBed();
  }, 300_000);

  afterAll(async () => {
    await bed?.stop();
  });

  it('hands off to Flux with the real engine: receipt in the stack, credential revoked and proven, nothing secret printed', async () => {
    await expectPulumiHandoff(bed, 'flux');
  }, 420_000);
});

describe('the cluster-admin choice, attacked with a stolen bootstrap token during the push', () => {
  let bed: HandoffBed<FluxSide>;
  let s: HandoffSummary;
  let stolen = '';
  const attempts: Record<string, AttemptResult> = {};

  beforeAll(async () => {
    bed = await startBed({ privilege: 'cluster-admin' });
    const loaded = loadHandoffPlan(bed.side.planPath);
    const admin = adminClients(bed.kubeconfigPath);
    const { deps, captured } = testHandoffDeps(loaded, bed.kubeconfigPath, {
      onStep: async (step: HandoffStep) => {
        if (step !== 'push') return;
        // The operator can request a token for the run's ServiceAccount: what a thief of the token would hold.
        const sa = (await admin.core.listNamespacedServiceAccount({ namespace: 'baton-system' })).items.find((x) =>
          x.metadata?.name?.startsWith('baton-bootstrap-'),
        )!.metadata!.name!;
        stolen = await stealToken(admin, 'baton-system', sa);
        Object.assign(attempts, await attack(stolen));
      },
    });
    s = await runHandoff(loaded, deps);
    expect(captured.text()).not.toContain(stolen);
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
    await attempt('push the planned Service as a NodePort', () => apply(service({ type: 'NodePort' })));
    await attempt('push the planned Service with an external IP', () =>
      apply(service({ externalIPs: ['203.0.113.7'] })),
    );
    await attempt('push the planned Service headless', () => apply(service({ clusterIP: 'None' })));
    return out;
  }

  it('refuses every attempt, naming the plan digest, and still hands off with cluster-admin recorded', async () => {
    expect(Object.keys(attempts)).toHaveLength(5);
    for (const [name, r] of Object.entries(attempts)) {
      expect(r.status, name).toBe(403);
      expect(r.message, name).toContain(s.confinement!.planDigest);
    }
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
