import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { loadTrustedKeys, readEntries, verifyLog } from '@baton/audit';
import { type HandoffSummary, isOwnedBy, loadManifestSet, RECEIPT_NAME, runHandoff } from '@baton/core';
import { BATON_SOURCE_URI, IMAGE_BUILDER_ID } from '@baton/image';
import {
  clientsFromToken,
  computeBootstrapRules,
  diffEffectiveRules,
  findBootstrapLeftovers,
  LockHeldError,
  mintBootstrapIdentity,
  readObject,
  revokeBootstrapIdentity,
  ruleAtoms,
} from '@baton/kube';
import { bedImageKey } from '@baton/testenv/images';
import { describe, expect, it } from 'vitest';
import { recordCompatMetrics } from '../../support/compat.js';
import { useHandoffCluster } from '../../support/handoff-cluster.js';
import { auditEventsBy, CLI, JWT_PATTERN, testHandoffDeps } from '../../support/handoff-run.js';
import { adminClients, statusOfCall } from '../../support/kube.js';

const execFileAsync = promisify(execFile);

const h = useHandoffCluster();
let winner: HandoffSummary;
let logText = '';

describe('baton up on a fresh cluster', () => {
  it('lets exactly one of two concurrent runs hold the cluster; the other fails fast naming the holder', async () => {
    const a = testHandoffDeps(h.env.loaded, h.cluster.kubeconfigPath);
    const b = testHandoffDeps(h.env.loaded, h.cluster.kubeconfigPath);
    const results = await Promise.allSettled([runHandoff(h.env.loaded, a.deps), runHandoff(h.env.loaded, b.deps)]);
    const won = results.filter((r): r is PromiseFulfilledResult<HandoffSummary> => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(
      lost.map((r) => String(r.reason)),
      'exactly one run fails',
    ).toHaveLength(1);
    expect(won).toHaveLength(1);
    winner = won[0]!.value;
    recordCompatMetrics('happy-path', winner);
    expect(lost[0]!.reason).toBeInstanceOf(LockHeldError);
    expect((lost[0]!.reason as Error).message).toContain(`cluster is locked by run ${winner.runId} by test`);
    logText = a.captured.text() + b.captured.text();
  });

  it('hands off: the controller owns every pushed object, the token is dead and proven dead', async () => {
    expect(winner.outcome, winner.error).toBe('handed-off');
    expect(winner.revision).toBe(h.env.revision);
    expect(winner.proof?.probeStatus).toBe(401);
    expect(winner.proof?.tokenReviewAuthenticated).toBe(false);
    expect(winner.credential?.subject).toMatch(/^system:serviceaccount:baton-system:baton-bootstrap-/);
    expect(winner.credential?.liveSeconds).toBeGreaterThan(0);
    // The live window is readiness + the apiserver's 10 s token cache + a little orchestration.
    expect(winner.credential!.liveSeconds).toBeLessThanOrEqual((winner.readinessSeconds ?? 0) + 20);
    const admin = adminClients(h.cluster.kubeconfigPath);
    const set = loadManifestSet(h.env.loaded.plan);
    // Every object Git carries is the controller's now; the push-only ones (its two Secrets) stay the push's.
    const pushOnly = new Set(set.pushOnly);
    const key = (o: { kind: string; metadata: { name: string; namespace?: string } }) =>
      [o.kind, o.metadata.namespace, o.metadata.name].filter(Boolean).join('/');
    expect([...pushOnly]).toEqual(['Secret/baton-system/baton-pull-credential', 'Secret/baton-system/baton-webhook']);
    for (const m of set.objects.filter((x) => !pushOnly.has(key(x.object)))) {
      const live = await readObject(admin, m.object);
      expect(live, `${m.object.kind}/${m.object.metadata.name}`).toBeDefined();
      expect(
        isOwnedBy(live!, 'baton-controller', 'baton-bootstrap'),
        `${m.object.kind}/${m.object.metadata.name}`,
      ).toBe(true);
    }
    expect(winner.takeover?.notTakenOver).toEqual([]);
    // Nothing of the bootstrap identity is left.
    expect(
      await findBootstrapLeftovers(
        testHandoffDeps(h.env.loaded, h.cluster.kubeconfigPath).deps.operator,
        'baton-system',
      ),
    ).toEqual([]);
  });

  it('records a verifiable audit event and an in-cluster receipt with an Event', async () => {
    const result = await verifyLog(h.env.auditLogPath, await loadTrustedKeys(h.env.keysPath));
    expect(result).toMatchObject({ ok: true, entries: 1, failures: [] });
    expect(winner.audit?.index).toBe(0);
    const admin = adminClients(h.cluster.kubeconfigPath);
    const receipt = await admin.core.readNamespacedConfigMap({ namespace: 'baton-system', name: RECEIPT_NAME });
    expect(receipt.data?.outcome).toBe('handed-off');
    expect(receipt.data?.auditEventId).toBe(winner.runId);
    expect(receipt.data?.auditLogIndex).toBe('0');
    expect(receipt.data?.auditCheckpoint).toContain('baton.dev/handoff');
    expect(receipt.data?.credentialFingerprint).toBe(winner.credential?.fingerprint);
    const events = await admin.core.listNamespacedEvent({ namespace: 'baton-system' });
    expect(events.items.some((e) => e.reason === 'HandedOff' && e.involvedObject.name === RECEIPT_NAME)).toBe(true);
  });

  it("verified the controller image's signature in its registry before minting, and the event and its subjects say so", async () => {
    const statements = [];
    for await (const e of readEntries(h.env.auditLogPath)) statements.push(e.statement);
    const [statement] = statements;
    const image = h.env.controllerImage;
    const digest = image.split('@')[1]!;
    expect(statement!.predicate.plan.push.images).toEqual({
      verification: 'verified',
      verified: [
        {
          image,
          digest,
          signedBy: (await bedImageKey()).verifierKey,
          // The bed's plans ask for the SLSA provenance the image build attaches, as a release's would.
          provenance: {
            builder: IMAGE_BUILDER_ID,
            source: BATON_SOURCE_URI,
            attestation: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
          },
        },
      ],
    });
    // The controller image is the statement's first subject, named once.
    expect(statement!.subject.filter((s) => s.digest.sha256 === digest.slice('sha256:'.length))).toEqual([
      { name: image.split('@')[0], digest: { sha256: digest.slice('sha256:'.length) } },
    ]);
  });

  it('the bootstrap identity made no request outside the plan, none refused, and none after the revocation', () => {
    const events = auditEventsBy(h.cluster.auditLogPath!, winner.credential!.subject);
    expect(events.length).toBeGreaterThan(5);
    const allowed = ruleAtoms(winner.credential!.rules);
    const revokedAt = Date.parse(winner.credential!.revokedAt!);
    const closedAt = Date.parse(winner.confinement!.closedAt!);
    for (const e of events) {
      expect(Date.parse(e.stageTimestamp), `${e.verb} ${e.requestURI} after revocation`).toBeLessThanOrEqual(revokedAt);
      // The confinement's probes, dry-run writes (nothing stored): outside the plan they are denied; the re-apply of a
      // planned object that confirms the close is allowed only until closedAt (the end of the write window).
      if (e.requestURI.includes('dryRun=All')) {
        const allowed = (e.responseStatus?.code ?? 0) < 400;
        if (allowed) expect(Date.parse(e.stageTimestamp), e.requestURI).toBeLessThanOrEqual(closedAt);
        else expect(e.responseStatus?.code, `${e.verb} ${e.requestURI}`).toBe(403);
        continue;
      }
      expect(e.responseStatus?.code ?? 0, `${e.verb} ${e.requestURI}`).toBeLessThan(400);
      expect(e.user.extra?.['authentication.kubernetes.io/credential-id']).toEqual([`JTI=${winner.credential!.jti}`]);
      const r = e.objectRef;
      if (!r?.resource) {
        expect(e.requestURI, 'only discovery outside resources').toMatch(/^\/(api|apis)(\/|$|\?)/);
        continue;
      }
      // Its own reviews: the scope check's rules, the proof's who-am-I, and (issue 18) the access reviews that confirm
      // the privilege ended.
      const isSelfReview =
        ['selfsubjectrulesreviews', 'selfsubjectreviews', 'selfsubjectaccessreviews'].includes(r.resource) &&
        e.verb === 'create';
      const atom = `${r.apiGroup ?? ''}|${r.resource}|${e.verb}|${e.verb === 'create' ? '*' : r.name}`;
      expect(isSelfReview || allowed.has(atom), `${atom} not in the plan`).toBe(true);
    }
  });

  it('never lets the token reach a log line', () => {
    expect(logText).toContain('minted bootstrap credential');
    expect(logText).not.toMatch(JWT_PATTERN);
    expect(JSON.stringify(winner)).not.toMatch(JWT_PATTERN);
  });

  it('scopes the bootstrap credential: exact rules; kube-system Secrets, a Pod in default and binding cluster-admin are 403', async () => {
    const { operator } = testHandoffDeps(h.env.loaded, h.cluster.kubeconfigPath).deps;
    const rules = computeBootstrapRules(loadManifestSet(h.env.loaded.plan).objects.map((m) => m.object));
    const id = await mintBootstrapIdentity(operator, {
      runId: 'scope-check',
      namespace: 'baton-system',
      rules,
      now: () => new Date(),
    });
    try {
      const self = clientsFromToken(operator, id.token);
      const diffs = await diffEffectiveRules(self, rules, ['gitops-system', 'default', 'kube-system', 'baton-system']);
      for (const d of diffs)
        expect({ ns: d.namespace, extra: d.extra, missing: d.missing }).toEqual({
          ns: d.namespace,
          extra: [],
          missing: [],
        });
      expect(await statusOfCall(() => self.core.listNamespacedSecret({ namespace: 'kube-system' }))).toBe(403);
      expect(
        await statusOfCall(() =>
          self.core.createNamespacedPod({
            namespace: 'default',
            body: { metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'x' }] } },
          }),
        ),
      ).toBe(403);
      expect(
        await statusOfCall(() =>
          self.rbac.createClusterRoleBinding({
            body: {
              metadata: { name: 'escalate-me' },
              roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
              subjects: [{ kind: 'ServiceAccount', name: id.name, namespace: 'baton-system' }],
            },
          }),
        ),
      ).toBe(403);
      // Its own install objects it may patch, but not another Deployment's name.
      expect(
        await statusOfCall(() => self.apps.readNamespacedDeployment({ namespace: 'gitops-system', name: 'other' })),
      ).toBe(403);
    } finally {
      await revokeBootstrapIdentity(operator, id, () => new Date());
    }
  });

  it('does nothing on a re-run after success and exits 0 (baton up through the CLI)', async () => {
    const admin = adminClients(h.cluster.kubeconfigPath);
    const { controller } = h.env.loaded.plan;
    const deployment = { namespace: controller.namespace, name: controller.name };
    const before = await admin.apps.readNamespacedDeployment(deployment);
    const { stdout, stderr } = await execFileAsync(
      process.execPath,
      [CLI, 'up', '--plan', h.env.planPath, '-o', 'json', '--verbose'],
      { env: { ...process.env, NO_COLOR: '1' } },
    );
    const summary = JSON.parse(stdout) as HandoffSummary;
    expect(summary.outcome).toBe('already-handed-off');
    expect(summary.error).toBeUndefined();
    expect(summary.credential).toBeUndefined();
    expect(stdout + stderr).not.toMatch(JWT_PATTERN);
    const after = await admin.apps.readNamespacedDeployment(deployment);
    expect(after.metadata?.managedFields?.map((f) => f.manager).sort()).toEqual(
      before.metadata?.managedFields?.map((f) => f.manager).sort(),
    );
    const sas = await admin.core.listNamespacedServiceAccount({ namespace: 'baton-system' });
    expect(sas.items.filter((s) => s.metadata?.name?.startsWith('baton-bootstrap-'))).toEqual([]);
    // The lock was released: the cluster is free for the next run.
    const { operator } = testHandoffDeps(h.env.loaded, h.cluster.kubeconfigPath).deps;
    expect(
      await statusOfCall(() =>
        operator.coordination.readNamespacedLease({ namespace: 'baton-system', name: 'baton-handoff' }),
      ),
    ).toBe(404);
    // `baton status` shows the receipt.
    const status = await execFileAsync(process.execPath, [CLI, 'status', '--plan', h.env.planPath, '-o', 'json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ runId: winner.runId, outcome: 'handed-off' });
  });
});
