import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { credentialLiveSeconds, HandoffOutcome, type HandoffRecord } from '@baton/audit';
import { BatonError, KubeApiError, TimeoutError } from '@baton/errors';
import {
  acquireHandoffLock,
  type BootstrapIdentity,
  type BootstrapIdentityRef,
  type BootstrapRules,
  bootstrapRefFor,
  clientsFromToken,
  computeBootstrapRules,
  diffEffectiveRules,
  findBootstrapLeftovers,
  flattenRules,
  type HandoffLock,
  type KubeClients,
  kubeCall,
  LockHeldError,
  mintBootstrapIdentity,
  probeToken,
  type RbacRule,
  type RevokeResult,
  releaseHandoffLock,
  renewHandoffLock,
  reviewToken,
  revokeBootstrapIdentity,
  statusOf,
  toKubeApiError,
} from '@baton/kube';
import type { Logger } from 'pino';
import type { AuditAppendResult, AuditSink } from './audit-sink.js';
import { type Clock, pollUntil } from './clock.js';
import type { LoadedPlan } from './handoff-plan.js';
import { Journal, type UnfinishedRun } from './journal.js';
import { loadManifestSet, type ManifestSet } from './manifest-set.js';
import { pushManifests } from './push.js';
import { type Receipt, readReceipt, writeReceipt } from './receipt.js';
import { checkTakeover, type TakeoverState } from './takeover.js';

/** Who runs the handoff. */
export interface HandoffActor {
  /** OS or CI user (the Kubernetes identity is read in preflight). */
  readonly user: string;
  readonly host: string;
  readonly pid: number;
  readonly via: 'cli' | 'pulumi' | 'fleet';
}

/** Collaborators of {@link runHandoff}; entry points wire the real ones, tests swap them. */
export interface HandoffDeps {
  /** Clients with the operator's credential: used for preflight, mint, readiness reads, revoke and record only. */
  readonly operator: KubeClients;
  readonly clock: Clock;
  readonly log: Logger;
  readonly audit: AuditSink;
  readonly actor: HandoffActor;
  /** A new unique run id (lowercase, DNS-safe). */
  readonly newRunId: () => string;
  /** Whether a process of this host is alive (to take over a lock whose holder was killed). */
  readonly isPidAlive: (pid: number) => boolean;
  /** Resolves a Git ref to a commit when the plan does not pin one. */
  readonly resolveRevision: (source: { url: string; ref: string }) => Promise<string>;
  /** SIGINT/SIGTERM from the entry point: aborts the run, which still revokes, proves and records. */
  readonly signal?: AbortSignal;
  /** Called as each step starts (tests use it to interrupt a run at a precise point). */
  readonly onStep?: (step: HandoffStep) => void | Promise<void>;
  /** Poll interval for readiness and proof, in ms. @default 250 */
  readonly pollIntervalMs?: number;
  /** How long the revoked token may keep authenticating (the API server's token cache is 10 s). @default 30000 */
  readonly proofTimeoutMs?: number;
  /** How often the cluster's handoff Lease is renewed, in ms. @default a third of the Lease's duration */
  readonly lockRenewIntervalMs?: number;
}

/** The steps of a handoff, in order. */
export const HandoffStep = {
  validate: 'validate',
  preflight: 'preflight',
  cleanup: 'cleanup',
  mint: 'mint',
  scopeCheck: 'scope-check',
  push: 'push',
  takeover: 'takeover',
  revoke: 'revoke',
  prove: 'prove',
  record: 'record',
} as const;
/** A handoff step name. */
export type HandoffStep = (typeof HandoffStep)[keyof typeof HandoffStep];

/** The outcome of a run: the audit outcomes, plus `already-handed-off` when nothing was pushed. */
export type HandoffResultOutcome = HandoffOutcome | 'already-handed-off';

/** The secret-free summary a run returns (and `baton up -o json` prints). */
export interface HandoffSummary {
  readonly runId: string;
  readonly outcome: HandoffResultOutcome;
  readonly failedStep?: string;
  readonly error?: string;
  readonly cluster: { readonly name: string; readonly server: string };
  readonly operator?: string;
  readonly revision?: string;
  readonly credential?: {
    /** The bootstrap ServiceAccount's username. */
    readonly subject: string;
    readonly fingerprint: string;
    readonly jti: string | undefined;
    readonly issuedAt: string;
    readonly expiresAt: string;
    /** When the API server first refused the token (the credential's real end). */
    readonly revokedAt: string | null;
    /** When the throwaway Secret's deletion was acknowledged. */
    readonly secretDeletedAt: string | null;
    readonly liveSeconds: number;
    readonly rules: readonly RbacRule[];
  };
  readonly proof?: {
    readonly probeStatus: number;
    readonly tokenReviewAuthenticated: boolean;
    readonly provedAt: string;
    /** Seconds from the Secret's deletion to the first 401. */
    readonly proofWaitSeconds: number;
  };
  /** Seconds from the end of the push until the controller had taken over. */
  readonly readinessSeconds?: number;
  /** liveSeconds − readinessSeconds − proofWaitSeconds: what the orchestration itself cost. */
  readonly overheadSeconds?: number;
  readonly totalSeconds: number;
  readonly takeover?: {
    readonly revisionSeen: string | undefined;
    readonly ownedObjects: readonly string[];
    readonly notTakenOver: readonly string[];
    /** Plan-declared push-only objects (never in Git), not expected to be taken over. */
    readonly pushOnly: readonly string[];
  };
  readonly leftoversRemoved: readonly string[];
  readonly stepDurationsMs: Readonly<Record<string, number>>;
  readonly audit?: AuditAppendResult;
  /**
   * Present when this run found the cluster already taken over for the declared revision (an earlier run was killed
   * after the takeover but before its receipt): it minted and pushed nothing, finished that run's record and wrote
   * the receipt. `outcome` is then `handed-off` and `credential` is the killed run's (from the journal), if known.
   */
  readonly resumed?: ResumedRun;
}

/** What a run that completed a killed run's handoff found and recorded (see {@link HandoffSummary.resumed}). */
export interface ResumedRun {
  /** The killed run whose credential pushed, or undefined when neither the journal nor a leftover names it. */
  readonly runId: string | undefined;
  /** Its last journaled step, when this machine's journal has it. */
  readonly lastStep: string | undefined;
  /** Whether this machine's journal had the killed run's credential (fingerprint, JTI, times). */
  readonly hasJournal: boolean;
  /**
   * The outcome of its audit event. Written by this run, it is `aborted`: a `handed-off` event must carry a revocation
   * proof (401 and TokenReview with the token), impossible without the token, which is never stored. When the killed
   * run had appended its own event before its receipt, that event stands and nothing is appended.
   */
  readonly recordedOutcome: HandoffOutcome;
  /** Whether the killed run's own event proves the token refused (only when it was killed after recording). */
  readonly revocationProven: boolean;
  /** What was done and what is not known, in one sentence. */
  readonly note: string;
}

const BAD_CREDENTIAL = 'the throwaway credential holds rules the plan did not compute';

/**
 * Runs one handoff: validate → preflight (+lock) → clean leftovers → mint → scope check → push → takeover →
 * revoke → prove → record. Revocation, proof and record run in `finally`, whatever ended the run (success,
 * failure, timeout, push-window budget, abort signal, exception). Libraries throw; the summary says how it ended.
 * @throws {ConfigError} when the plan or manifest set is refused (nothing was created).
 * @throws {LockHeldError} when another run holds the cluster (nothing was created).
 */
export async function runHandoff(loaded: LoadedPlan, deps: HandoffDeps): Promise<HandoffSummary> {
  const { plan } = loaded;
  const { clock, operator } = deps;
  const runId = deps.newRunId();
  const log = deps.log.child({ runId, cluster: plan.cluster.name });
  const interval = deps.pollIntervalMs ?? 250;
  const t0 = clock.monotonicMs();
  const startedAt = clock.now();
  const durations: Record<string, number> = {};
  let current: HandoffStep = HandoffStep.validate;
  let stepStart = t0;
  const journal = new Journal(plan.journalDir, plan.cluster.name);
  const enter = async (step: HandoffStep, data?: Record<string, unknown>) => {
    durations[current] = Math.round(clock.monotonicMs() - stepStart);
    current = step;
    stepStart = clock.monotonicMs();
    journal.write(runId, step, clock.now(), data);
    log.info({ step }, 'step');
    await deps.onStep?.(step);
  };

  journal.write(runId, 'start', startedAt, { pid: deps.actor.pid, host: deps.actor.host });
  log.info({ step: current }, 'step');
  // Validation comes first: a refused set must create nothing, not even the lock.
  let set: ManifestSet;
  let rules: BootstrapRules;
  try {
    set = loadManifestSet(plan);
    rules = computeBootstrapRules(set.objects.map((m) => m.object));
  } catch (err) {
    journal.write(runId, 'finished', clock.now(), { outcome: 'refused' });
    throw err;
  }

  await enter(HandoffStep.preflight);
  let lock: HandoffLock | undefined;
  let operatorName = '';
  // How long another host must wait before it may take the lock of a run that died without releasing it.
  const lockSeconds = plan.push.budgetSeconds + plan.takeover.timeoutSeconds + 120;
  try {
    operatorName = await preflight(operator, plan.batonNamespace);
    lock = await acquireHandoffLock(operator, {
      namespace: plan.batonNamespace,
      holder: { runId, user: `${deps.actor.user} (${operatorName})`, host: deps.actor.host, pid: deps.actor.pid },
      durationSeconds: lockSeconds,
      now: () => clock.now(),
      isPidAlive: deps.isPidAlive,
    });
  } catch (err) {
    journal.write(runId, 'finished', clock.now(), { outcome: 'refused' });
    throw err;
  }
  if (lock.tookOverFrom) log.warn({ staleHolder: lock.tookOverFrom }, 'took over a stale handoff lock');
  // The Lease is renewed, not sized to the run: the push budget bounds mint to takeover, but cleanup, revoke, the
  // proof (proofTimeoutMs), record, each API call and a wait for the audit log's file lock have no common bound, and a
  // Lease that lapsed mid-run would let another host mint a second credential. Losing it stops the push.
  const lockLost = new AbortController();
  const stopRenewing = new AbortController();
  const renewing = keepLock(lock);
  const releaseLock = async () => {
    stopRenewing.abort();
    await renewing;
    if (lock)
      await releaseHandoffLock(operator, lock).catch((err: unknown) =>
        log.error({ err: safeError(err) }, 'could not release the lock'),
      );
  };

  let ref: BootstrapIdentityRef | undefined;
  let identity: BootstrapIdentity | undefined;
  let revision: string | undefined;
  let failure: unknown;
  let pushEndMs: number | undefined;
  let takeover: TakeoverState | undefined;
  let readinessSeconds: number | undefined;
  let controllerReadyAt: Date | undefined;
  const leftoversRemoved: string[] = [];
  const budgetAc = new AbortController();
  const stopBudget = new AbortController();
  const runSignal = AbortSignal.any([budgetAc.signal, lockLost.signal, ...(deps.signal ? [deps.signal] : [])]);
  try {
    const receipt = await readReceipt(operator, plan.batonNamespace);
    if (receipt?.outcome === HandoffOutcome.handedOff) {
      // Push is for install; pull is for operate: a handed-off cluster is only re-checked.
      const state = await checkTakeover(operator, plan, set, receipt.revision);
      const healthy = state.isComplete;
      log.info({ receiptRunId: receipt.runId, healthy }, 'cluster already handed off');
      await releaseLock();
      journal.write(runId, 'finished', clock.now(), { outcome: 'already-handed-off' });
      return {
        runId,
        outcome: 'already-handed-off',
        ...(healthy
          ? {}
          : { failedStep: 'takeover', error: `cluster was handed off by run ${receipt.runId}, but ${state.reason}` }),
        cluster: { name: plan.cluster.name, server: operator.server },
        operator: operatorName,
        revision: receipt.revision,
        totalSeconds: seconds(clock.monotonicMs() - t0),
        takeover: takeoverSummary(state),
        leftoversRemoved,
        stepDurationsMs: durations,
      };
    }

    await enter(HandoffStep.cleanup);
    revision = plan.pull.source.revision ?? (await deps.resolveRevision(plan.pull.source));
    const removedByRun = new Map<string, RevokeResult>();
    const listedAt = clock.now();
    for (const left of await findBootstrapLeftovers(operator, plan.batonNamespace)) {
      const r = await revokeBootstrapIdentity(operator, left, () => clock.now());
      removedByRun.set(left.runId, r);
      leftoversRemoved.push(...r.deleted);
      log.warn(
        { leftoverRunId: left.runId, deleted: r.deleted.length },
        'removed bootstrap leftovers of an earlier run',
      );
    }
    // A run killed after the controller took over (during takeover's last poll, revoke, prove or record) left a
    // handed-off cluster without a receipt. Push is for install: finish that run's record instead of minting again.
    // Only where a run may have been killed (no receipt, leftovers, or a journaled credential never finished): after
    // a run that ended failed, a controller that became ready later is handed off anew, with a provable credential.
    const mayBeKilled =
      receipt === undefined ||
      removedByRun.size > 0 ||
      journal.unfinished().some((r) => r.runId !== runId && mintedEntry(r) !== undefined);
    const found = mayBeKilled ? await checkTakeover(operator, plan, set, revision) : undefined;
    if (found?.isComplete) {
      takeover = found;
      return await completeKilledHandoff(found, removedByRun, listedAt, revision, receipt);
    }
    await recordCrashedRuns(removedByRun, revision);

    // A signal during preflight or cleanup stops the run before any credential exists.
    runSignal.throwIfAborted();
    ref = bootstrapRefFor(runId, plan.batonNamespace, rules);
    await enter(HandoffStep.mint, {
      name: ref.name,
      namespace: ref.namespace,
      roleNamespaces: ref.roleNamespaces,
      revision,
    });
    await ensureNamespaces(operator, set);
    identity = await mintBootstrapIdentity(operator, {
      runId,
      namespace: plan.batonNamespace,
      rules,
      now: () => clock.now(),
    });
    const issuedMs = clock.monotonicMs();
    journal.write(runId, 'minted', clock.now(), {
      fingerprint: fullFingerprint(identity.token),
      jti: identity.jti,
      subject: identity.username,
      issuedAt: identity.issuedAt.toISOString(),
      expiresAt: identity.expiresAt.toISOString(),
      name: identity.name,
      namespace: identity.namespace,
      secretUid: identity.secretUid,
      audiences: identity.audiences,
    });
    log.info(
      { subject: identity.username, jti: identity.jti, expiresAt: identity.expiresAt.toISOString() },
      'minted bootstrap credential',
    );
    // The push window is a hard budget on the credential's life, counted from its issue.
    clock
      .sleep(plan.push.budgetSeconds * 1000 - (clock.monotonicMs() - issuedMs), stopBudget.signal)
      .then(() =>
        budgetAc.abort(
          new TimeoutError(
            `push window budget of ${plan.push.budgetSeconds} s exceeded (push.budgetSeconds); the bootstrap credential was revoked`,
          ),
        ),
      )
      .catch(() => {});
    const signal = runSignal;
    const bootstrap = clientsFromToken(operator, identity.token);

    await enter(HandoffStep.scopeCheck);
    const diffs = await diffEffectiveRules(bootstrap, rules, [
      plan.controller.namespace,
      plan.batonNamespace,
      'default',
      'kube-system',
    ]);
    const bad = diffs.filter((d) => d.extra.length > 0 || d.missing.length > 0 || d.isIncomplete);
    if (bad.length > 0) {
      const d = bad[0]!;
      throw new KubeApiError(
        `${BAD_CREDENTIAL} (or lacks some): in namespace ${d.namespace} extra [${d.extra.slice(0, 5).join(', ')}] missing [${d.missing.slice(0, 5).join(', ')}]; a binding to system:serviceaccounts or system:authenticated widens every ServiceAccount: remove it, then rerun`,
        { details: { diffs: bad } },
      );
    }
    signal.throwIfAborted();

    await enter(HandoffStep.push, { objects: set.objects.length });
    await pushManifests(
      bootstrap,
      set.objects.map((m) => m.object),
      { fieldManager: plan.push.fieldManager, clock, signal },
    );
    pushEndMs = clock.monotonicMs();

    await enter(HandoffStep.takeover);
    const rev = revision;
    const r = await pollUntil(
      async () => {
        takeover = await checkTakeover(operator, plan, set, rev);
        return takeover.isComplete ? takeover : undefined;
      },
      {
        clock,
        intervalMs: interval,
        timeoutMs: plan.takeover.timeoutSeconds * 1000,
        what: 'controller takeover (takeover.timeoutSeconds)',
        signal,
      },
      () => takeover?.reason ?? '',
    );
    controllerReadyAt = clock.now();
    readinessSeconds = seconds(clock.monotonicMs() - pushEndMs);
    log.info(
      { readinessSeconds, owned: r.value.ownedObjects.length, notTakenOver: r.value.notTakenOver },
      'controller took over',
    );
  } catch (err) {
    // An aborted wait throws a generic AbortError: the signal's reason says what aborted it (budget, SIGTERM).
    failure = runSignal.aborted && (err as Error)?.name === 'AbortError' ? runSignal.reason : err;
    log.error({ step: current, err: safeError(failure) }, 'handoff step failed');
  } finally {
    stopBudget.abort();
  }

  // Revoke, prove and record run on every path: they use the operator's credential and no run signal.
  let summary: HandoffSummary;
  try {
    summary = await finish();
  } finally {
    await releaseLock();
  }
  journal.write(runId, 'finished', clock.now(), { outcome: summary.outcome });
  return summary;

  /** Renews the Lease every third of its duration until released; when another run holds it, aborts the run. */
  async function keepLock(held: HandoffLock): Promise<void> {
    for (;;) {
      try {
        await clock.sleep(deps.lockRenewIntervalMs ?? (lockSeconds * 1000) / 3, stopRenewing.signal);
      } catch {
        return;
      }
      try {
        await renewHandoffLock(operator, held, clock.now());
      } catch (err) {
        if (err instanceof LockHeldError) {
          log.error({ err: safeError(err) }, 'lost the handoff lock');
          lockLost.abort(err);
          return;
        }
        log.warn({ err: safeError(err) }, 'could not renew the handoff lock; retrying');
      }
    }
  }

  /** The parts of a record every run of this plan shares: cluster, actor, declared plan. */
  function recordFrame(rev: string): Pick<HandoffRecord, 'cluster' | 'actor' | 'plan'> {
    return {
      cluster: { name: plan.cluster.name, server: operator.server, caFingerprint: caFingerprint(operator) },
      actor: {
        user: `${deps.actor.user}${operatorName ? ` (${operatorName})` : ''}`.slice(0, 253),
        host: deps.actor.host,
        via: deps.actor.via,
      },
      plan: {
        push: {
          profile: plan.push.profile,
          bundleDigest: set.digest,
          objectCount: set.objects.length,
          controller: {
            name: plan.controller.name,
            namespace: plan.controller.namespace,
            image: set.controllerImage.image,
            imageDigest: set.controllerImage.digest,
          },
        },
        pull: {
          source: { url: plan.pull.source.url, ref: plan.pull.source.ref, revision: rev, path: plan.pull.source.path },
          serviceAccount: { namespace: plan.controller.namespace, name: plan.controller.serviceAccount },
        },
      },
    };
  }

  /**
   * A run killed with kill -9 journaled its credential (fingerprint, JTI, times; never the token) before using it.
   * Its leftovers were just removed; record it as `aborted` so the audit trail holds every credential that existed.
   * Its revocation cannot be proven (the token is never stored), so the record has no `revocation`.
   */
  async function recordCrashedRuns(
    removedByRun: ReadonlyMap<string, RevokeResult>,
    rev: string,
    skipRunId?: string,
  ): Promise<void> {
    for (const run of journal.unfinished()) {
      if (run.runId === runId || run.runId === skipRunId) continue;
      const minted = mintedEntry(run);
      const mintEntry = run.entries.find((e) => e.step === 'mint')?.data as { revision?: string } | undefined;
      if (minted) {
        const revokedAt = revokedAtBound(secretDeletion(run, removedByRun.get(run.runId)), minted.expiresAt);
        const record: HandoffRecord = {
          runId: run.runId,
          ...recordFrame(mintEntry?.revision ?? rev),
          outcome: HandoffOutcome.aborted,
          failedStep: stepOf(run.lastStep),
          error: `the run ended without finishing (killed?) during ${run.lastStep}; run ${runId} removed its bootstrap objects${revokedAt ? ` (revokedAt: the Secret's deletion plus the API server's ${TOKEN_CACHE_SECONDS} s token cache, an upper bound)` : ' after the token had expired'}; the revocation is not proven because the token is never stored`,
          startedAt: run.entries[0]?.at ?? minted.issuedAt,
          finishedAt: clock.now().toISOString(),
          credential: journaledCredential(minted, revokedAt, flattenRules(rules)),
          stepDurationsMs: {},
        };
        const r = await deps.audit.append(record);
        log.warn(
          { crashedRunId: run.runId, lastStep: run.lastStep, auditIndex: r.index },
          'recorded a crashed run as aborted',
        );
      }
      journal.write(run.runId, 'finished', clock.now(), { outcome: 'aborted', resumedBy: runId });
    }
  }

  /**
   * The cluster is already taken over for `rev` and carries no handed-off receipt: an earlier run was killed between
   * the takeover and its receipt. Mint and push nothing; record that run once (its credential from the journal, its
   * end from its Secret's deletion, readiness as observed now) and write the receipt, so later runs only re-check.
   * The record is `aborted`, not `handed-off`: the audit schema rightly requires a handed-off event to prove the
   * token refused (401 and TokenReview), which needs the token, and the token is never stored.
   */
  async function completeKilledHandoff(
    state: TakeoverState,
    removedByRun: ReadonlyMap<string, RevokeResult>,
    listedAt: Date,
    rev: string,
    lastReceipt: Receipt | undefined,
  ): Promise<HandoffSummary> {
    const observedAt = clock.now();
    const unfinished = journal.unfinished().filter((r) => r.runId !== runId);
    // The latest run that journaled a credential is the one whose push the controller took over.
    const killed = unfinished.findLast((r) => mintedEntry(r) !== undefined);
    const minted = killed ? mintedEntry(killed) : undefined;
    await recordCrashedRuns(removedByRun, rev, killed?.runId);
    // Without this machine's journal, a single leftover identity still names the run (by its label).
    const leftoverRunIds = [...removedByRun.keys()].filter((id) => !unfinished.some((r) => r.runId === id));
    const killedRunId = killed?.runId ?? (leftoverRunIds.length === 1 ? leftoverRunIds[0] : undefined);
    const removed = killedRunId ? removedByRun.get(killedRunId) : undefined;
    log.warn({ killedRunId, hasJournal: minted !== undefined }, 'cluster already taken over without a receipt');

    await enter(HandoffStep.record);
    const short = rev.slice(0, 12);
    const secretDeletedAt = killed ? secretDeletion(killed, removed) : removed?.secret && removed.secretDeletedAt;
    const deletion = removed?.secret
      ? `run ${runId} deleted its bound Secret ${removed.secret.namespace}/${removed.secret.name} (uid ${removed.secret.uid}) at ${removed.secretDeletedAt.toISOString()}`
      : secretDeletedAt
        ? `it had deleted its bound Secret itself at ${secretDeletedAt.toISOString()} (journal)`
        : `its bound Secret was already gone when run ${runId} looked at ${listedAt.toISOString()}`;
    let revokedAt = minted ? revokedAtBound(secretDeletedAt ?? listedAt, minted.expiresAt) : null;
    const lastStep = killed?.lastStep;
    const who = killedRunId ? `run ${killedRunId}` : 'an unknown run';
    let note = minted
      ? `${who} was killed during ${lastStep} after the controller had taken over revision ${short}; run ${runId} minted and pushed nothing: ${deletion}; ${revokedAt ? `revokedAt is that time plus the API server's ${TOKEN_CACHE_SECONDS} s token cache (an upper bound)` : 'the token had expired by then'}; the revocation is not proven by a request or TokenReview because the token is never stored`
      : `the controller had already taken over revision ${short} and the cluster has no handed-off receipt${lastReceipt ? ` (its receipt says run ${lastReceipt.runId} ended ${lastReceipt.outcome})` : ''}; this machine's journal has no credential for ${who} (journal on another machine?), so its fingerprint and lifetime are unknown and not recorded; run ${runId} minted and pushed nothing${leftoverRunIds.length > 0 ? ` and removed the bootstrap objects of run(s) ${leftoverRunIds.join(', ')}` : ''}`;
    const recorded = killed?.entries.find((e) => e.step === 'recorded')?.data as JournaledRecord | undefined;
    if (recorded) {
      // Killed between its audit append and its receipt: its own event (with its proof, if any) stands.
      revokedAt = recorded.revokedAt;
      note = `${who} recorded its ${recorded.outcome} event (audit index ${recorded.audit.index}) and was killed before writing the receipt; run ${runId} minted, pushed and recorded nothing, and wrote the receipt`;
    }
    const credentialLive = minted
      ? credentialLiveSeconds({ issuedAt: minted.issuedAt, expiresAt: minted.expiresAt, revokedAt })
      : undefined;
    const flatRules = flattenRules(rules);
    const readiness = {
      controllerReadyAt: observedAt.toISOString(),
      reconciledRevision: rev,
      ownedObjectCount: state.ownedObjects.length,
      ownedObjects: state.ownedObjects.slice(0, 64),
    };
    const record: HandoffRecord = {
      runId: killedRunId ?? runId,
      ...recordFrame(rev),
      outcome: HandoffOutcome.aborted,
      failedStep: lastStep === undefined ? 'unknown' : stepOf(lastStep),
      error: `${note}; readiness as observed by run ${runId}`.slice(0, 2000),
      startedAt: killed?.entries[0]?.at ?? startedAt.toISOString(),
      finishedAt: clock.now().toISOString(),
      ...(minted ? { credential: journaledCredential(minted, revokedAt, flatRules) } : {}),
      readiness,
      stepDurationsMs: {},
    };
    const audit = recorded?.audit ?? (await deps.audit.append(record));
    const revocationProven = recorded?.revocationProven === true;
    await writeReceipt(
      operator,
      plan.batonNamespace,
      {
        runId: record.runId,
        outcome: HandoffOutcome.handedOff,
        revision: rev,
        recordedAt: clock.now().toISOString(),
        credentialFingerprint: minted?.fingerprint ?? '',
        ...receiptAuditFields(audit),
        completedBy: runId,
        ...(revocationProven ? {} : { revocationProof: 'none: completed by a later run; the token is never stored' }),
      },
      clock.now(),
    );
    log.info({ auditIndex: audit.index, eventId: audit.eventId, killedRunId }, 'completed a killed run’s handoff');
    if (killed) {
      const outcome = recorded?.outcome ?? HandoffOutcome.aborted;
      journal.write(killed.runId, 'finished', clock.now(), { outcome, handedOffBy: runId });
    }
    await releaseLock();
    durations[current] = Math.round(clock.monotonicMs() - stepStart);
    journal.write(runId, 'finished', clock.now(), { outcome: HandoffOutcome.handedOff, resumed: record.runId });
    return {
      runId,
      outcome: HandoffOutcome.handedOff,
      cluster: { name: plan.cluster.name, server: operator.server },
      operator: operatorName,
      revision: rev,
      ...(minted && credentialLive !== undefined
        ? {
            credential: {
              subject: minted.subject,
              fingerprint: minted.fingerprint,
              jti: minted.jti,
              issuedAt: minted.issuedAt,
              expiresAt: minted.expiresAt,
              revokedAt,
              secretDeletedAt: secretDeletedAt?.toISOString() ?? null,
              liveSeconds: round(credentialLive),
              rules: flatRules,
            },
          }
        : {}),
      totalSeconds: seconds(clock.monotonicMs() - t0),
      takeover: takeoverSummary(state),
      leftoversRemoved,
      stepDurationsMs: durations,
      audit,
      resumed: {
        runId: killedRunId,
        lastStep,
        hasJournal: minted !== undefined,
        recordedOutcome: recorded?.outcome ?? HandoffOutcome.aborted,
        revocationProven,
        note,
      },
    };
  }

  async function finish(): Promise<HandoffSummary> {
    const failedStep = failure ? current : undefined;
    let outcome: HandoffOutcome = failure
      ? isAbort(failure, deps.signal)
        ? HandoffOutcome.aborted
        : HandoffOutcome.failed
      : HandoffOutcome.handedOff;
    let error = failure ? safeError(failure) : undefined;
    let proofFailure: string | undefined;
    let revokeResult: Awaited<ReturnType<typeof revokeBootstrapIdentity>> | undefined;
    let proof: HandoffSummary['proof'];
    let revokedAt: Date | undefined;
    let review: Awaited<ReturnType<typeof reviewToken>> | undefined;
    if (ref) {
      await enter(HandoffStep.revoke);
      try {
        revokeResult = await revokeBootstrapIdentity(operator, ref, () => clock.now());
        // A run killed from here on is completed by the next one, which needs when the token's Secret went.
        journal.write(runId, 'revoked', clock.now(), {
          secretDeletedAt: revokeResult.secretDeletedAt.toISOString(),
          ...(revokeResult.secret ? { secretUid: revokeResult.secret.uid } : {}),
        });
        log.info({ deleted: revokeResult.deleted.length }, 'revoked bootstrap credential');
      } catch (err) {
        proofFailure = `revocation failed: ${safeError(err)}`;
      }
    }
    if (identity && revokeResult) {
      await enter(HandoffStep.prove);
      const token = identity.token;
      try {
        const deletedMs = clock.monotonicMs();
        // The API server caches successful token checks for 10 s: poll until the token is refused.
        const r = await pollUntil(
          async () => {
            const status = await probeToken(operator, token);
            return status === 401 ? status : undefined;
          },
          {
            clock,
            intervalMs: Math.max(interval, 500),
            timeoutMs: deps.proofTimeoutMs ?? 30_000,
            what: 'the revoked token being refused (401)',
          },
        );
        revokedAt = clock.now();
        const proofWaitSeconds = seconds(clock.monotonicMs() - deletedMs);
        review = await reviewToken(operator, token);
        proof = {
          probeStatus: r.value,
          tokenReviewAuthenticated: review.authenticated,
          provedAt: clock.now().toISOString(),
          proofWaitSeconds,
        };
        if (review.authenticated) proofFailure = 'TokenReview still authenticates the revoked token';
        log.info(
          { probeStatus: r.value, tokenReviewAuthenticated: review.authenticated, proofWaitSeconds },
          'proved revocation',
        );
      } catch (err) {
        proofFailure = `proof failed: ${safeError(err)}`;
      }
    }
    if (proofFailure) {
      log.error({ err: proofFailure }, 'bootstrap credential revocation not proven');
      outcome = HandoffOutcome.failed;
      error = error ? `${error}; ${proofFailure}` : proofFailure;
    }
    const finalFailedStep =
      failedStep ?? (proofFailure ? (revokeResult ? HandoffStep.prove : HandoffStep.revoke) : undefined);
    const liveSeconds = identity
      ? seconds((revokedAt ?? identity.expiresAt).getTime() - identity.issuedAt.getTime())
      : undefined;
    const flatRules = flattenRules(rules);
    const credential: HandoffSummary['credential'] = identity
      ? {
          subject: identity.username,
          fingerprint: fullFingerprint(identity.token),
          jti: identity.jti,
          issuedAt: identity.issuedAt.toISOString(),
          expiresAt: identity.expiresAt.toISOString(),
          revokedAt: revokedAt?.toISOString() ?? null,
          secretDeletedAt: revokeResult?.secretDeletedAt.toISOString() ?? null,
          liveSeconds: liveSeconds ?? 0,
          rules: flatRules,
        }
      : undefined;

    await enter(HandoffStep.record);
    let audit: AuditAppendResult | undefined;
    const base = {
      runId,
      outcome,
      ...(finalFailedStep ? { failedStep: finalFailedStep } : {}),
      ...(error ? { error } : {}),
      cluster: { name: plan.cluster.name, server: operator.server },
      operator: operatorName,
      ...(revision ? { revision } : {}),
      ...(credential ? { credential } : {}),
      ...(proof ? { proof } : {}),
      ...(readinessSeconds !== undefined ? { readinessSeconds } : {}),
      ...(readinessSeconds !== undefined && liveSeconds !== undefined && proof
        ? { overheadSeconds: round(liveSeconds - readinessSeconds - proof.proofWaitSeconds) }
        : {}),
      ...(takeover ? { takeover: takeoverSummary(takeover) } : {}),
      leftoversRemoved,
      stepDurationsMs: durations,
    };
    if (revision) {
      try {
        const record = buildRecord();
        audit = await deps.audit.append(record);
        // A run killed before its receipt is completed by the next one, which must not record it a second time.
        journal.write(runId, 'recorded', clock.now(), {
          outcome,
          revokedAt: credential?.revokedAt ?? null,
          revocationProven: record.revocation !== undefined && !record.revocation.tokenReview.authenticated,
          audit,
        });
        await writeReceipt(
          operator,
          plan.batonNamespace,
          {
            runId,
            outcome,
            revision,
            recordedAt: clock.now().toISOString(),
            credentialFingerprint: credential?.fingerprint ?? '',
            ...receiptAuditFields(audit),
          },
          clock.now(),
        );
        log.info({ auditIndex: audit.index, eventId: audit.eventId }, 'recorded handoff');
      } catch (err) {
        log.error({ err: safeError(err) }, 'could not record the handoff');
        outcome = HandoffOutcome.failed;
        error = `${error ? `${error}; ` : ''}record failed: ${safeError(err)}`;
      }
    }
    durations[current] = Math.round(clock.monotonicMs() - stepStart);
    return {
      ...base,
      outcome,
      ...(error ? { error, failedStep: finalFailedStep ?? HandoffStep.record } : {}),
      totalSeconds: seconds(clock.monotonicMs() - t0),
      ...(audit ? { audit } : {}),
    };

    function buildRecord(): HandoffRecord {
      return {
        runId,
        ...recordFrame(revision ?? ''),
        outcome,
        ...(finalFailedStep ? { failedStep: finalFailedStep } : {}),
        ...(error ? { error: error.slice(0, 2000) } : {}),
        startedAt: startedAt.toISOString(),
        finishedAt: clock.now().toISOString(),
        ...(identity && credential
          ? {
              credential: {
                kind: 'serviceaccount-token' as const,
                fingerprint: credential.fingerprint,
                ...(identity.jti ? { jti: identity.jti } : {}),
                subject: identity.username,
                audiences: [...identity.audiences],
                boundObject: {
                  kind: 'Secret' as const,
                  namespace: identity.namespace,
                  name: identity.name,
                  uid: identity.secretUid,
                },
                rbacRules: recordRules(flatRules),
                issuedAt: credential.issuedAt,
                expiresAt: credential.expiresAt,
                revokedAt: credential.revokedAt,
                liveSeconds: credential.liveSeconds,
              },
            }
          : {}),
        ...(takeover?.isComplete && controllerReadyAt
          ? {
              readiness: {
                controllerReadyAt: controllerReadyAt.toISOString(),
                reconciledRevision: revision ?? '',
                ownedObjectCount: takeover.ownedObjects.length,
                ownedObjects: takeover.ownedObjects.slice(0, 64),
              },
            }
          : {}),
        ...(proof && revokeResult && review
          ? {
              revocation: {
                method: 'bound-object-deleted' as const,
                ...(revokeResult.secret ? { deletedObject: { kind: 'Secret', ...revokeResult.secret } } : {}),
                tokenReview: { authenticated: review.authenticated, checkedAt: proof.provedAt },
                directRequest: { statusCode: proof.probeStatus, checkedAt: revokedAt?.toISOString() ?? proof.provedAt },
              },
            }
          : {}),
        stepDurationsMs: Object.fromEntries(Object.entries(durations).map(([k, v]) => [k, Math.max(0, Math.round(v))])),
      };
    }
  }
}

/** Reads version, identity and the APIs the handoff needs; ensures the baton namespace. Returns the operator's username. */
async function preflight(operator: KubeClients, batonNamespace: string): Promise<string> {
  await kubeCall(
    'read the API server version (is the cluster reachable?)',
    () => operator.version.getCode(),
    'check --kubeconfig/--context and that the API server is up',
  );
  const resources = await kubeCall('discover core/v1 resources', () => operator.core.getAPIResources());
  if (!resources.resources.some((r) => r.name === 'serviceaccounts/token')) {
    throw new KubeApiError(
      'the API server does not offer TokenRequest (serviceaccounts/token); baton needs it to mint a short-lived bootstrap credential',
    );
  }
  const who = await kubeCall('SelfSubjectReview (who is the operator?)', () =>
    operator.authn.createSelfSubjectReview({ body: {} }),
  );
  try {
    await operator.core.readNamespace({ name: batonNamespace });
  } catch (err) {
    if (statusOf(err) !== 404) throw err;
    await createNamespaceIfAbsent(operator, batonNamespace, 'baton');
  }
  return who.status?.userInfo?.username ?? 'unknown';
}

// Roles live in namespaces: the operator creates the install's namespace so the scoped Role can be bound in it.
async function ensureNamespaces(operator: KubeClients, set: ManifestSet): Promise<void> {
  for (const m of set.objects) {
    if (m.object.kind !== 'Namespace') continue;
    const name = m.object.metadata.name;
    try {
      await operator.core.readNamespace({ name });
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
      await createNamespaceIfAbsent(operator, name, 'baton-mint');
    }
  }
}

async function createNamespaceIfAbsent(operator: KubeClients, name: string, fieldManager: string): Promise<void> {
  try {
    await operator.core.createNamespace({ fieldManager, body: { metadata: { name } } });
  } catch (err) {
    // Another run (or the operator) created it meanwhile: that is the state we want.
    if (statusOf(err) !== 409) throw toKubeApiError(err, `create Namespace ${name}`);
  }
}

/** The API server caches a successful token check this long (ADR 0005 §3), so a deleted Secret's token may live on. */
const TOKEN_CACHE_SECONDS = 10;

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

function mintedEntry(run: UnfinishedRun): MintedEntry | undefined {
  return run.entries.find((e) => e.step === 'minted')?.data as MintedEntry | undefined;
}

/** Where the receipt points in the audit log. */
function receiptAuditFields(a: AuditAppendResult) {
  return {
    auditEventId: a.eventId,
    auditEventDigest: a.eventDigest,
    auditLogIndex: String(a.index),
    auditCheckpoint: a.checkpoint,
  };
}

/** The summary's view of a takeover check. */
function takeoverSummary(state: TakeoverState): NonNullable<HandoffSummary['takeover']> {
  return {
    revisionSeen: state.revisionSeen,
    ownedObjects: state.ownedObjects,
    notTakenOver: state.notTakenOver,
    pushOnly: state.pushOnly,
  };
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

/** Rules in the audit record's shape (mutable arrays, at most 64). */
function recordRules(rules: readonly RbacRule[]): NonNullable<HandoffRecord['credential']>['rbacRules'] {
  return rules.slice(0, 64).map((r) => ({
    ...(r.namespace ? { namespace: r.namespace } : {}),
    apiGroups: [...r.apiGroups],
    resources: [...r.resources],
    verbs: [...r.verbs],
    ...(r.resourceNames ? { resourceNames: [...r.resourceNames] } : {}),
  }));
}

// A deadline (`baton up --timeout`) is a failure; an operator's signal is an abort.
function isAbort(err: unknown, signal: AbortSignal | undefined): boolean {
  if (err instanceof TimeoutError) return false;
  return signal?.aborted === true && (err === signal.reason || (err as Error)?.name === 'AbortError');
}

/** A secret-free one-line description of an error. */
function safeError(err: unknown): string {
  if (err instanceof BatonError || err instanceof Error) return err.message.split('\n').slice(0, 6).join(' ');
  return String(err);
}

/** `sha256:<64 hex>` of a secret: what audit records carry instead of the secret. */
export function fullFingerprint(secret: string): string {
  return `sha256:${createHash('sha256').update(secret).digest('hex')}`;
}

/** `sha256:<64 hex>` of the API server CA certificate (DER). */
function caFingerprint(c: KubeClients): string {
  let pem = c.caData ? Buffer.from(c.caData, 'base64').toString('utf8') : '';
  const caFile = c.kc.getCurrentCluster()?.caFile;
  if (!pem && caFile) pem = readFileSync(caFile, 'utf8');
  const b64 = pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
  return `sha256:${createHash('sha256').update(Buffer.from(b64, 'base64')).digest('hex')}`;
}

function seconds(ms: number): number {
  return round(ms / 1000);
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
