import { credentialLiveSeconds, HandoffOutcome, type HandoffRecord } from '@baton/audit';
import { flattenRules, type RbacRule, type RevokeResult } from '@baton/kube';
import type { AuditAppendResult } from '../audit-sink.js';
import { type UnfinishedRun, unfinishedRuns } from '../journal.js';
import { writeReceipt } from '../receipt.js';
import type { TakeoverState } from '../takeover.js';
import { receiptAuditFields, recordFrame, recordRules } from './record.js';
import { type HandoffRun, round } from './run.js';
import { summaryFrame, takeoverSummary } from './summary.js';
import { HandoffStep, type HandoffSummary } from './types.js';

/** The API server caches a successful token check this long (ADR 0005 §3), so a deleted Secret's token may live on. */
export const TOKEN_CACHE_SECONDS = 10;

/** What a run journals right after appending its audit event, before its receipt. */
interface JournaledRecord {
  readonly outcome: HandoffOutcome;
  readonly revokedAt: string | null;
  readonly revocationProven: boolean;
  readonly audit: AuditAppendResult;
}

/** The credential facts a run journals right after minting (never the token). */
interface MintedEntry {
  readonly fingerprint: string;
  readonly jti?: string;
  readonly subject: string;
  readonly issuedAt: string;
  readonly expiresAt: string;
  readonly name: string;
  readonly namespace: string;
  readonly secretUid: string;
  readonly audiences?: string[];
}

/** The credential a run journaled, if it got that far. */
export function mintedEntry(run: UnfinishedRun): MintedEntry | undefined {
  return run.entries.find((e) => e.step === 'minted')?.data as MintedEntry | undefined;
}

/**
 * A run killed with kill -9 journaled its credential (fingerprint, JTI, times; never the token) before using it.
 * Its leftovers were just removed; record it as `aborted` so the audit trail holds every credential that existed.
 * Its revocation cannot be proven (the token is never stored), so the record has no `revocation`.
 * @throws what the audit sink throws.
 */
export async function recordCrashedRuns(
  run: HandoffRun,
  removedByRun: ReadonlyMap<string, RevokeResult>,
  rev: string,
  skipRunId?: string,
): Promise<void> {
  for (const killed of unfinishedRuns(run.journal)) {
    if (killed.runId === run.runId || killed.runId === skipRunId) continue;
    const minted = mintedEntry(killed);
    const mintEntry = killed.entries.find((e) => e.step === 'mint')?.data as { revision?: string } | undefined;
    if (minted) {
      const revokedAt = revokedAtBound(secretDeletion(killed, removedByRun.get(killed.runId)), minted.expiresAt);
      const record: HandoffRecord = {
        runId: killed.runId,
        ...recordFrame(run, mintEntry?.revision ?? rev),
        outcome: HandoffOutcome.aborted,
        failedStep: stepOf(killed.lastStep),
        error: `the run ended without finishing (killed?) during ${killed.lastStep}; run ${run.runId} removed its bootstrap objects${revokedAt ? ` (revokedAt: the Secret's deletion plus the API server's ${TOKEN_CACHE_SECONDS} s token cache, an upper bound)` : ' after the token had expired'}; the revocation is not proven because the token is never stored`,
        startedAt: killed.entries[0]?.at ?? minted.issuedAt,
        finishedAt: run.clock.now().toISOString(),
        credential: journaledCredential(minted, revokedAt, runRules(run)),
        stepDurationsMs: {},
      };
      const r = await run.deps.audit.append(record);
      run.log.warn(
        { crashedRunId: killed.runId, lastStep: killed.lastStep, auditIndex: r.index },
        'recorded a crashed run as aborted',
      );
    }
    await run.journalSafely('finished', { outcome: 'aborted', resumedBy: run.runId }, killed.runId);
  }
}

/** What {@link completeKilledHandoff} works out about the killed run. */
interface KilledRun {
  readonly killed: UnfinishedRun | undefined;
  readonly killedRunId: string | undefined;
  readonly minted: MintedEntry | undefined;
  readonly recorded: JournaledRecord | undefined;
  readonly secretDeletedAt: Date | undefined;
  readonly revokedAt: string | null;
  readonly note: string;
  readonly leftoverRunIds: readonly string[];
}

/**
 * The cluster is already taken over for `rev` and carries no handed-off receipt: an earlier run was killed between
 * the takeover and its receipt. Mint and push nothing; record that run once (its credential from the journal, its
 * end from its Secret's deletion, readiness as observed now) and write the receipt, so later runs only re-check.
 * The record is `aborted`, not `handed-off`: the audit schema rightly requires a handed-off event to prove the
 * token refused (401 and TokenReview), which needs the token, and the token is never stored.
 * @throws what the audit sink or the receipt write throws.
 */
export async function completeKilledHandoff(
  run: HandoffRun,
  state: TakeoverState,
  removedByRun: ReadonlyMap<string, RevokeResult>,
  listedAt: Date,
  rev: string,
): Promise<HandoffSummary> {
  const observedAt = run.clock.now();
  const k = describeKilledRun(run, removedByRun, listedAt, rev);
  await recordCrashedRuns(run, removedByRun, rev, k.killed?.runId);
  run.log.warn(
    { killedRunId: k.killedRunId, hasJournal: k.minted !== undefined },
    'cluster already taken over without a receipt',
  );

  await run.enter(HandoffStep.record);
  const rules = runRules(run);
  const record: HandoffRecord = {
    runId: k.killedRunId ?? run.runId,
    ...recordFrame(run, rev),
    outcome: HandoffOutcome.aborted,
    failedStep: k.killed?.lastStep === undefined ? 'unknown' : stepOf(k.killed.lastStep),
    error: `${k.note}; readiness as observed by run ${run.runId}`.slice(0, 2000),
    startedAt: k.killed?.entries[0]?.at ?? run.startedAt.toISOString(),
    finishedAt: run.clock.now().toISOString(),
    ...(k.minted ? { credential: journaledCredential(k.minted, k.revokedAt, rules) } : {}),
    readiness: {
      controllerReadyAt: observedAt.toISOString(),
      reconciledRevision: rev,
      ownedObjectCount: state.ownedObjects.length,
      ownedObjects: state.ownedObjects.slice(0, 64),
    },
    stepDurationsMs: {},
  };
  const audit = k.recorded?.audit ?? (await run.deps.audit.append(record));
  const revocationProven = k.recorded?.revocationProven === true;
  await writeReceipt(
    run.deps.operator,
    run.plan.batonNamespace,
    {
      runId: record.runId,
      outcome: HandoffOutcome.handedOff,
      revision: rev,
      recordedAt: run.clock.now().toISOString(),
      credentialFingerprint: k.minted?.fingerprint ?? '',
      ...receiptAuditFields(audit),
      completedBy: run.runId,
      ...(revocationProven ? {} : { revocationProof: 'none: completed by a later run; the token is never stored' }),
    },
    run.clock.now(),
  );
  run.log.info(
    { auditIndex: audit.index, eventId: audit.eventId, killedRunId: k.killedRunId },
    'completed a killed run’s handoff',
  );
  if (k.killed) {
    const outcome = k.recorded?.outcome ?? HandoffOutcome.aborted;
    await run.journalSafely('finished', { outcome, handedOffBy: run.runId }, k.killed.runId);
  }
  return {
    ...summaryFrame(run),
    outcome: HandoffOutcome.handedOff,
    revision: rev,
    ...(k.minted ? { credential: killedCredential(k, k.minted, rules) } : {}),
    totalSeconds: run.elapsedSeconds(),
    takeover: takeoverSummary(state),
    audit,
    resumed: {
      runId: k.killedRunId,
      lastStep: k.killed?.lastStep,
      hasJournal: k.minted !== undefined,
      recordedOutcome: k.recorded?.outcome ?? HandoffOutcome.aborted,
      revocationProven,
      note: k.note,
    },
  };
}

/** Which run was killed, what the journal says of it, and the sentence that explains the record. */
function describeKilledRun(
  run: HandoffRun,
  removedByRun: ReadonlyMap<string, RevokeResult>,
  listedAt: Date,
  rev: string,
): KilledRun {
  const unfinished = unfinishedRuns(run.journal).filter((r) => r.runId !== run.runId);
  // The latest run that journaled a credential is the one whose push the controller took over.
  const killed = unfinished.findLast((r) => mintedEntry(r) !== undefined);
  const minted = killed ? mintedEntry(killed) : undefined;
  // Without this machine's journal, a single leftover identity still names the run (by its label).
  const leftoverRunIds = [...removedByRun.keys()].filter((id) => !unfinished.some((r) => r.runId === id));
  const killedRunId = killed?.runId ?? (leftoverRunIds.length === 1 ? leftoverRunIds[0] : undefined);
  const removed = killedRunId ? removedByRun.get(killedRunId) : undefined;
  const secretDeletedAt = killed ? secretDeletion(killed, removed) : removed?.secret && removed.secretDeletedAt;
  const recorded = killed?.entries.find((e) => e.step === 'recorded')?.data as JournaledRecord | undefined;
  const who = killedRunId ? `run ${killedRunId}` : 'an unknown run';
  const me = `run ${run.runId}`;
  if (recorded) {
    // Killed between its audit append and its receipt: its own event (with its proof, if any) stands.
    const note = `${who} recorded its ${recorded.outcome} event (audit index ${recorded.audit.index}) and was killed before writing the receipt; ${me} minted, pushed and recorded nothing, and wrote the receipt`;
    return {
      killed,
      killedRunId,
      minted,
      recorded,
      secretDeletedAt,
      revokedAt: recorded.revokedAt,
      note,
      leftoverRunIds,
    };
  }
  const deletion = removed?.secret
    ? `${me} deleted its bound Secret ${removed.secret.namespace}/${removed.secret.name} (uid ${removed.secret.uid}) at ${removed.secretDeletedAt.toISOString()}`
    : secretDeletedAt
      ? `it had deleted its bound Secret itself at ${secretDeletedAt.toISOString()} (journal)`
      : `its bound Secret was already gone when ${me} looked at ${listedAt.toISOString()}`;
  const revokedAt = minted ? revokedAtBound(secretDeletedAt ?? listedAt, minted.expiresAt) : null;
  const lastReceipt = run.receipt;
  const note = minted
    ? `${who} was killed during ${killed?.lastStep} after the controller had taken over revision ${rev.slice(0, 12)}; ${me} minted and pushed nothing: ${deletion}; ${revokedAt ? `revokedAt is that time plus the API server's ${TOKEN_CACHE_SECONDS} s token cache (an upper bound)` : 'the token had expired by then'}; the revocation is not proven by a request or TokenReview because the token is never stored`
    : `the controller had already taken over revision ${rev.slice(0, 12)} and the cluster has no handed-off receipt${lastReceipt ? ` (its receipt says run ${lastReceipt.runId} ended ${lastReceipt.outcome})` : ''}; this machine's journal has no credential for ${who} (journal on another machine?), so its fingerprint and lifetime are unknown and not recorded; ${me} minted and pushed nothing${leftoverRunIds.length > 0 ? ` and removed the bootstrap objects of run(s) ${leftoverRunIds.join(', ')}` : ''}`;
  return { killed, killedRunId, minted, recorded, secretDeletedAt, revokedAt, note, leftoverRunIds };
}

function killedCredential(
  k: KilledRun,
  m: MintedEntry,
  rules: readonly RbacRule[],
): NonNullable<HandoffSummary['credential']> {
  return {
    subject: m.subject,
    fingerprint: m.fingerprint,
    jti: m.jti,
    issuedAt: m.issuedAt,
    expiresAt: m.expiresAt,
    revokedAt: k.revokedAt,
    secretDeletedAt: k.secretDeletedAt?.toISOString() ?? null,
    liveSeconds: round(credentialLiveSeconds({ issuedAt: m.issuedAt, expiresAt: m.expiresAt, revokedAt: k.revokedAt })),
    rules,
  };
}

function runRules(run: HandoffRun): RbacRule[] {
  return flattenRules(run.rules ?? { cluster: [], namespaced: {} });
}

/** A killed run's credential in the audit record's shape, from its journal entry (the token is never stored). */
function journaledCredential(
  minted: MintedEntry,
  revokedAt: string | null,
  rules: readonly RbacRule[],
): NonNullable<HandoffRecord['credential']> {
  const times = { issuedAt: minted.issuedAt, expiresAt: minted.expiresAt, revokedAt };
  return {
    kind: 'serviceaccount-token',
    fingerprint: minted.fingerprint,
    ...(minted.jti ? { jti: minted.jti } : {}),
    subject: minted.subject,
    audiences: minted.audiences ?? [],
    boundObject: { kind: 'Secret', namespace: minted.namespace, name: minted.name, uid: minted.secretUid },
    rbacRules: recordRules(rules),
    ...times,
    liveSeconds: credentialLiveSeconds(times),
  };
}

/** The handoff step a journal entry belongs to (`minted` is written inside mint, `revoked` inside revoke). */
function stepOf(journalStep: string): string {
  if (journalStep === 'minted') return HandoffStep.mint;
  if (journalStep === 'revoked') return HandoffStep.revoke;
  if (journalStep === 'confined') return HandoffStep.confine;
  return journalStep;
}

/** When a killed run's bound Secret was deleted: by this run (cleanup), else by itself (its `revoked` entry). */
function secretDeletion(run: UnfinishedRun, removed: RevokeResult | undefined): Date | undefined {
  if (removed?.secret) return removed.secretDeletedAt;
  const revoked = run.entries.find((e) => e.step === 'revoked')?.data as { secretDeletedAt?: string } | undefined;
  return revoked?.secretDeletedAt ? new Date(revoked.secretDeletedAt) : undefined;
}

/**
 * The latest instant a killed run's token could still authenticate: its Secret's deletion plus the API server's token
 * cache; null when the token expired first (or nothing deleted it).
 */
function revokedAtBound(secretDeletedAt: Date | undefined, expiresAt: string): string | null {
  if (!secretDeletedAt) return null;
  const bound = secretDeletedAt.getTime() + TOKEN_CACHE_SECONDS * 1000;
  return bound < Date.parse(expiresAt) ? new Date(bound).toISOString() : null;
}
