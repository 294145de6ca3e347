import { computeBootstrapRules, flattenRules } from '@baton/kube';
import { inspectCluster } from './handoff/cleanup.js';
import { confine, mint, scopeCheck } from './handoff/credential.js';
import { prove, revoke } from './handoff/ending.js';
import type {
  Begun,
  Confined,
  Ending,
  Inspection,
  Minted,
  ProofOutcome,
  Pushed,
  RecordOutcome,
  RevokeOutcome,
  Scoped,
} from './handoff/phases.js';
import { checkCluster, holdLock } from './handoff/preflight.js';
import { awaitTakeover, push } from './handoff/pushing.js';
import { recordRun } from './handoff/record.js';
import { repair } from './handoff/repair.js';
import { HandoffRun, safeError } from './handoff/run.js';
import { finalSummary } from './handoff/summary.js';
import { type HandoffDeps, HandoffStep, type HandoffSummary } from './handoff/types.js';
import type { LoadedPlan } from './handoff-plan.js';
import { checkImages } from './images/check-images.js';
import { loadManifestSet } from './manifest-set.js';

/** The steps {@link driveHandoff} runs, in order; {@link HANDOFF_STEPS} are the real ones. */
export interface HandoffSteps {
  /** Validate, preflight and lock; throws a refusal (nothing created). */
  readonly begin: (run: HandoffRun) => Promise<Begun>;
  /** Receipt re-check, leftovers, resume: the run ends there, before anything is minted, or goes on with a scope. */
  readonly cleanup: (run: HandoffRun, begun: Begun) => Promise<Inspection>;
  readonly confine: (run: HandoffRun, scoped: Scoped) => Promise<Confined>;
  readonly mint: (run: HandoffRun, confined: Confined) => Promise<Minted>;
  readonly scopeCheck: (run: HandoffRun, minted: Minted) => Promise<void>;
  readonly push: (run: HandoffRun, minted: Minted) => Promise<Pushed>;
  readonly takeover: (run: HandoffRun, pushed: Pushed) => Promise<void>;
  /** Revoke, prove, repair and record never throw: each returns what it did and what it could not. */
  readonly revoke: (run: HandoffRun) => Promise<RevokeOutcome>;
  readonly prove: (run: HandoffRun, revoked: RevokeOutcome) => Promise<ProofOutcome>;
  /**
   * Only when the post-close check found a rewrite: push the planned values again and restart, or stop. Returns why
   * the repair identity's revocation is not proven, when it is not.
   */
  readonly repair: (run: HandoffRun) => Promise<string | undefined>;
  readonly record: (run: HandoffRun, ending: Ending) => Promise<RecordOutcome>;
  readonly summarize: (run: HandoffRun, ending: Ending) => HandoffSummary;
}

/** The real steps. */
export const HANDOFF_STEPS: HandoffSteps = {
  begin: beginRun,
  cleanup: inspectCluster,
  confine,
  mint,
  scopeCheck,
  push,
  takeover: awaitTakeover,
  revoke,
  prove,
  repair,
  record: async (run, ending) => {
    await run.enterSafely(HandoffStep.record);
    return recordRun(run, ending);
  },
  summarize: finalSummary,
};

/**
 * Runs one handoff:
 * validate → preflight (+lock) → cleanup → confine → mint → scope check → push (+close, post-close check) →
 * takeover → revoke → prove → (repair, only after a rewrite the post-close check found) → record.
 * Whatever ends the pushing part (success, failure, timeout, push-window budget, abort signal, exception, a journal
 * that cannot be written), revoke, prove and record run after it, and one `finally` releases the lock and journals
 * the end. Libraries throw; the summary says how the run ended.
 * @throws {ConfigError} when the plan or manifest set is refused (nothing was created).
 * @throws {LockHeldError} when another run holds the cluster (nothing was created).
 * @throws {KubeApiError} when preflight fails (nothing was created).
 */
export async function runHandoff(loaded: LoadedPlan, deps: HandoffDeps): Promise<HandoffSummary> {
  return driveHandoff(new HandoffRun(loaded.plan, deps), HANDOFF_STEPS);
}

/** The handoff's driver over `steps` (tests pass their own to check the ordering guarantees on a fake clock). */
export async function driveHandoff(run: HandoffRun, steps: HandoffSteps): Promise<HandoffSummary> {
  const begun = await steps.begin(run);
  let summary: HandoffSummary | undefined;
  try {
    summary = (await pushingPart(run, begun, steps)) ?? (await endingPart(run, steps));
    return summary;
  } finally {
    await begun.held.release();
    run.closeStep();
    await run.journalSafely('finished', { outcome: summary?.outcome ?? 'failed' });
  }
}

/**
 * Validates the set (first: a refused set creates nothing, not even the lock), checks the cluster and takes its
 * lock. A refusal is journaled as `refused` and thrown.
 */
async function beginRun(run: HandoffRun): Promise<Begun> {
  await run.journal.write(run.runId, 'start', run.startedAt, { pid: run.deps.actor.pid, host: run.deps.actor.host });
  run.log.info({ step: run.current }, 'step');
  try {
    const set = loadManifestSet(run.plan);
    const rules = computeBootstrapRules(set.objects.map((m) => m.object));
    run.set = set;
    run.rules = rules;
    run.fact(`${set.objects.length} objects, ${flattenRules(rules).length} rules computed`);
    // Before the cluster is touched: an image its policy does not vouch for is never pushed.
    run.images = await checkImages(run.plan, set, run.log, run.deps.images);
    // Before the cluster is touched: a handoff that could not be recorded must not start.
    const signer = await run.deps.audit.check();
    if (signer) run.log.info({ signerKind: signer.kind, verifierKey: signer.verifierKey }, 'audit signer checked');
    await run.enter(HandoffStep.preflight);
    await checkCluster(run);
    return { held: await holdLock(run), set, rules };
  } catch (err) {
    await run.journalSafely('finished', { outcome: 'refused' });
    throw err;
  }
}

/**
 * Everything that needs or uses the credential, in order, each step handing the next what it produced. Returns a
 * summary when the run ends before minting (the cluster is already handed off, or a killed run's handoff was
 * completed); any error is noted on the run.
 */
async function pushingPart(run: HandoffRun, begun: Begun, steps: HandoffSteps): Promise<HandoffSummary | undefined> {
  try {
    const inspection = await steps.cleanup(run, begun);
    if ('ended' in inspection) return inspection.ended;
    const confined = await steps.confine(run, inspection.scoped);
    const minted = await steps.mint(run, confined);
    await steps.scopeCheck(run, minted);
    const pushed = await steps.push(run, minted);
    await steps.takeover(run, pushed);
  } catch (err) {
    run.fail(err);
  } finally {
    run.stopBudget();
  }
  return undefined;
}

/**
 * Revoke, prove, repair and record: on every path, with the operator's credential, each whatever the one before did.
 * The repair comes after the proof: a thief's token for the first identity is dead by then.
 */
async function endingPart(run: HandoffRun, steps: HandoffSteps): Promise<HandoffSummary> {
  const revoke = await settle(
    run,
    'revoke',
    () => steps.revoke(run),
    (failure) => ({ failure }),
  );
  const proof = await settle(
    run,
    'prove',
    () => steps.prove(run, revoke),
    (failure) => ({ failure }),
  );
  const repairFailure = await settle(
    run,
    'repair',
    () => steps.repair(run),
    (failure) => failure,
  );
  const proved: Ending = { revoke, proof, ...(repairFailure ? { repairFailure } : {}) };
  const record = await settle(
    run,
    'record',
    () => steps.record(run, proved),
    (failure) => ({ failure }),
  );
  run.closeStep();
  return steps.summarize(run, { ...proved, record });
}

/** An ending step's outcome; the steps do not throw, and a bug that does must not skip the next one. */
async function settle<T>(
  run: HandoffRun,
  name: string,
  step: () => Promise<T>,
  failed: (failure: string) => T,
): Promise<T> {
  try {
    return await step();
  } catch (err) {
    run.log.error({ step: name, err: safeError(err) }, 'step threw; the next one runs anyway');
    return failed(`${name} failed: ${safeError(err)}`);
  }
}
