import { execFile, spawn } from 'node:child_process';
import { renameSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { loadTrustedKeys, readEntries, verifyLog } from '@baton/audit';
import { type HandoffSummary, Journal, RECEIPT_NAME } from '@baton/core';
import { findBootstrapLeftovers } from '@baton/kube';
import { describe, expect, it } from 'vitest';
import { useHandoffCluster } from '../../support/handoff-cluster.js';
import { bootstrapMints, CLI, JWT_PATTERN, testHandoffDeps } from '../../support/handoff-run.js';

// A run killed with kill -9 after the controller took over, but before its receipt, must not make the next
// `baton up` mint a second credential and push again: the next run completes the killed run's record instead.

const execFileAsync = promisify(execFile);
const TSX = ['--conditions=@baton/source', '--import', 'tsx'];
const HELD = fileURLToPath(new URL('../../support/held-handoff.ts', import.meta.url));
const baton = async (args: string[]) => {
  const { stdout, stderr } = await execFileAsync(process.execPath, [CLI, ...args]);
  return { summary: JSON.parse(stdout) as HandoffSummary, text: stdout + stderr };
};

/** Starts a handoff in its own process, waits until it stops at `step`, and kills it with SIGKILL. */
async function killAt(env: { readonly planPath: string }, kubeconfigPath: string, step: string): Promise<string> {
  const child = spawn(process.execPath, [...TSX, HELD, env.planPath, kubeconfigPath, step], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => {
    err += d;
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_c, signal) => resolve(signal)));
  const runId = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      const m = /held at \S+ (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.on('exit', () => reject(new Error(`the held handoff exited before ${step}:\n${err}`)));
  });
  child.kill('SIGKILL');
  expect(await exited).toBe('SIGKILL');
  return runId;
}

async function auditPredicates(path: string) {
  const out = [];
  for await (const e of readEntries(path)) out.push(e.statement.predicate);
  return out;
}

describe.each([
  { killedDuring: 'revoke', holdAt: 'revoke', journal: 'kept', why: 'the next run deletes its Secret' },
  { killedDuring: 'prove', holdAt: 'prove', journal: 'kept', why: 'it had deleted its Secret itself' },
  { killedDuring: 'record', holdAt: 'recorded', journal: 'kept', why: 'its event was appended, its receipt not' },
  { killedDuring: 'revoke', holdAt: 'revoke', journal: 'lost', why: 'the journal is on another machine' },
])('a run killed during $killedDuring after the takeover ($why)', ({ killedDuring, holdAt, journal }) => {
  const h = useHandoffCluster();
  // Killed after appending its own handed-off event: that event (with its proof) stands, nothing is appended.
  const hadRecorded = holdAt === 'recorded';
  let killedRunId = '';
  let resumed: HandoffSummary;
  let resumedText = '';

  it('is killed once the controller owns everything, before any receipt', async () => {
    const { cluster, env } = h;
    killedRunId = await killAt(env, cluster.kubeconfigPath, holdAt);
    const { operator } = testHandoffDeps(env.loaded, cluster.kubeconfigPath).deps;
    const cm = await operator.core
      .readNamespacedConfigMap({ namespace: 'baton-system', name: RECEIPT_NAME })
      .catch(() => undefined);
    expect(cm).toBeUndefined();
    expect(bootstrapMints(cluster.auditLogPath!).map((e) => e.objectRef?.name)).toEqual([
      `baton-bootstrap-${killedRunId}`,
    ]);
    if (journal === 'lost') {
      const j = new Journal(env.loaded.plan.journalDir, env.loaded.plan.cluster.name);
      renameSync(j.path, join(env.dir, 'journal-of-another-machine.jsonl'));
    }
  });

  it('the next baton up mints nothing, pushes nothing and completes the handoff', async () => {
    const { cluster, env } = h;
    const { summary, text } = await baton(['up', '--plan', env.planPath, '-o', 'json', '--verbose']);
    resumed = summary;
    resumedText = text;
    expect(summary.outcome, summary.error).toBe('handed-off');
    expect(summary.error).toBeUndefined();
    expect(summary.resumed).toMatchObject({
      runId: killedRunId,
      hasJournal: journal === 'kept',
      recordedOutcome: hadRecorded ? 'handed-off' : 'aborted',
      revocationProven: hadRecorded,
    });
    expect(summary.takeover?.notTakenOver).toEqual([]);
    // No second credential: the only bootstrap ServiceAccount ever created is the killed run's.
    expect(bootstrapMints(cluster.auditLogPath!).map((e) => e.objectRef?.name)).toEqual([
      `baton-bootstrap-${killedRunId}`,
    ]);
    const steps = new Journal(env.loaded.plan.journalDir, env.loaded.plan.cluster.name)
      .entries()
      .filter((e) => e.runId === summary.runId)
      .map((e) => e.step);
    expect(steps).toEqual(['start', 'preflight', 'cleanup', 'record', 'finished']);
    const { operator } = testHandoffDeps(env.loaded, cluster.kubeconfigPath).deps;
    expect(await findBootstrapLeftovers(operator, 'baton-system')).toEqual([]);
    if (killedDuring === 'revoke') {
      expect(summary.leftoversRemoved).toContain(`Secret/baton-system/baton-bootstrap-${killedRunId}`);
    } else if (killedDuring === 'prove') {
      // It had revoked its identity; its confinement (deny-all by then) goes once the revocation is proven, which
      // the killed run never got to: this run removes it.
      expect(summary.leftoversRemoved).toEqual([
        `ValidatingAdmissionPolicyBinding/baton-bootstrap-${killedRunId}`,
        `ValidatingAdmissionPolicy/baton-bootstrap-${killedRunId}`,
      ]);
    } else {
      expect(summary.leftoversRemoved).toEqual([]);
    }
    expect(text).not.toMatch(JWT_PATTERN);
  });

  it('the audit trail holds one event for the handoff, with the killed run’s credential only, and verifies', async () => {
    const { env } = h;
    const events = await auditPredicates(env.auditLogPath);
    expect(events).toHaveLength(1);
    const e = events[0]!;
    expect(e.runId).toBe(killedRunId);
    expect(e.readiness?.reconciledRevision).toBe(env.revision);
    if (hadRecorded) {
      expect(e.outcome).toBe('handed-off');
      expect(e.revocation?.tokenReview.authenticated).toBe(false);
      expect(e.revocation?.directRequest.statusCode).toBe(401);
      expect(e.credential?.fingerprint).toBe(resumed.credential?.fingerprint);
      expect(resumed.credential?.revokedAt).toBe(e.credential?.revokedAt);
    } else if (journal === 'kept') {
      expect(e.outcome).toBe('aborted');
      expect(e.failedStep).toBe(killedDuring);
      expect(e.revocation).toBeUndefined();
      expect(e.error).toContain('never stored');
      expect(e.credential?.fingerprint).toMatch(/^sha256:/);
      expect(e.credential?.fingerprint).toBe(resumed.credential?.fingerprint);
      expect(e.credential?.subject).toBe(`system:serviceaccount:baton-system:baton-bootstrap-${killedRunId}`);
      // The token dies with its Secret, at the latest once the API server's 10 s token cache has lapsed.
      const deletedAt = Date.parse(resumed.credential?.secretDeletedAt ?? '');
      expect(Date.parse(e.credential?.revokedAt ?? '')).toBe(deletedAt + 10_000);
      expect(resumed.credential?.revokedAt).toBe(e.credential?.revokedAt);
    } else {
      expect(e.outcome).toBe('aborted');
      // Without the journal, nothing says which step the killed run was in, nor what its credential was.
      expect(e.failedStep).toBe('unknown');
      expect(e.revocation).toBeUndefined();
      expect(e.credential).toBeUndefined();
      expect(resumed.credential).toBeUndefined();
      expect(resumed.resumed?.note).toContain('journal');
    }
    const verdict = await verifyLog(env.auditLogPath, await loadTrustedKeys(env.keysPath));
    expect(verdict).toMatchObject({ ok: true, entries: 1, failures: [] });
    expect(resumed.audit?.eventId).toBe(killedRunId);
  });

  it('the cluster carries a handed-off receipt, and a third run only re-checks', async () => {
    const { cluster, env } = h;
    const { operator } = testHandoffDeps(env.loaded, cluster.kubeconfigPath).deps;
    const cm = await operator.core.readNamespacedConfigMap({ namespace: 'baton-system', name: RECEIPT_NAME });
    expect(cm.data).toMatchObject({
      outcome: 'handed-off',
      runId: killedRunId,
      revision: env.revision,
      auditEventId: killedRunId,
      completedBy: resumed.runId,
    });
    // The receipt says when the token's death was not proven by a request.
    expect(cm.data?.revocationProof === undefined).toBe(hadRecorded);
    const { summary: third, text } = await baton(['up', '--plan', env.planPath, '-o', 'json', '--verbose']);
    expect(third.outcome, third.error).toBe('already-handed-off');
    expect(third.error).toBeUndefined();
    expect(third.credential).toBeUndefined();
    expect(bootstrapMints(cluster.auditLogPath!)).toHaveLength(1);
    expect(await auditPredicates(env.auditLogPath)).toHaveLength(1);
    expect(text + resumedText).not.toMatch(JWT_PATTERN);
  });
});
