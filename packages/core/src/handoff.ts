import { computeBootstrapRules, flattenRules } from '@baton/kube';
import { inspectCluster } from './handoff/cleanup.js';
import { confine, mint, scopeCheck } from './handoff/credential.js';
import { prove, revoke } from './handoff/ending.js';
import { checkCluster, type HeldLock, holdLock } from './handoff/preflight.js';
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
  readonly begin: (run: HandoffRun) => Promise<HeldLock>;
  /** Receipt re-check, leftovers, resume: a summary ends the run before anything is minted. */
  readonly cleanup: (run: HandoffRun) => Promise<HandoffSummary | undefined>;
  readonly confine: (run: HandoffRun) => Promise<void>;
  readonly mint: (run: HandoffRun) => Promise<void>;
  readonly scopeCheck: (run: HandoffRun) => Promise<void>;
  readonly push: (run: HandoffRun) => Promise<void>;
  readonly takeover: (run: HandoffRun) => Promise<void>;
  /** Revoke, prove, repair and record never throw: what they could not do is noted on the run. */
  readonly revoke: (run: HandoffRun) => Promise<void>;
  readonly prove: (run: HandoffRun) => Promise<void>;
  /** Only when the post-close check found a rewrite: push the planned values again and restart, or stop. */
  readonly repair: (run: HandoffRun) => Promise<void>;
  readonly record: (run: HandoffRun) => Promise<void>;
  readonly summarize: (run: HandoffRun) => HandoffSummary;
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
  record: async (run) => {
    await run.enterSafely(HandoffStep.record);
    await recordRun(run);
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
  const held = await steps.begin(run);
  let summary: HandoffSummary | undefined;
  try {
    summary = (await pushingPart(run, steps)) ?? (await endingPart(run, steps));
    return summary;
  } finally {
    await held.release();
    run.closeStep();
    await run.journalSafely('finished', { outcome: summary?.outcome ?? 'failed' });
  }
}

/**
 * Validates the set (first: a refused set creates nothing, not even the lock), checks the cluster and takes its
 * lock. A refusal is journaled as `refused` and thrown.
 */
async function beginRun(run: HandoffRun): Promise<HeldLock> {
  await run.journal.write(run.runId, 'start', run.startedAt, { pid: run.deps.actor.pid, host: run.deps.actor.host });
  run.log.info({ step: run.current }, 'step');
  try {
    run.set = loadManifestSet(run.plan);
    run.rules = computeBootstrapRules(run.set.objects.map((m) => m.object));
    run.fact(`${run.set.objects.length} objects, ${flattenRules(run.rules).length} rules computed`);
    // Before the cluster is touched: an image its policy does not vouch for is never pushed.
    run.images = await checkImages(run.plan, run.set, run.log, run.deps.images);
    // Before the cluster is touched: a handoff that could not be recorded must not start.
    const signer = await run.deps.audit.check();
    if (signer) run.log.info({ signerKind: signer.kind, verifierKey: signer.verifierKey }, 'audit signer checked');
    await run.enter(HandoffStep.preflight);
    await checkCluster(run);
    return await holdLock(run);
  } catch (err) {
    await run.journalSafely('finished', { outcome: 'refused' });
    throw err;
  }
}

/**
 * Everything that needs or uses the credential, in order. Returns a summary when the run ends before minting
 * (the cluster is already handed off, or a killed run's handoff was completed); any error is noted on the run.
 */
async function pushingPart(run: HandoffRun, steps: HandoffSteps): Promise<HandoffSummary | undefined> {
  try {
    const early = await steps.cleanup(run);
    if (early) return early;
    await steps.confine(run);
    await steps.mint(run);
    await steps.scopeCheck(run);
    await steps.push(run);
    await steps.takeover(run);
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
  for (const [name, step] of [
    ['revoke', steps.revoke],
    ['prove', steps.prove],
    ['repair', steps.repair],
    ['record', steps.record],
  ] as const) {
    // They note what they could not do and do not throw; a bug that does must not skip the next one.
    await step(run).catch((err: unknown) => {
      run.log.error({ step: name, err: safeError(err) }, 'step threw; the next one runs anyway');
      if (name === 'record') run.recordFailure ??= `record failed: ${safeError(err)}`;
      else run.proofFailure ??= `${name} failed: ${safeError(err)}`;
    });
  }
  run.closeStep();
  return steps.summarize(run);
}
