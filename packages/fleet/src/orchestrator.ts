import type { Clock } from '@baton/core';
import type { AttemptOutcome, ClusterResult, FleetProgressEvent, FleetResult } from './fleet-result.js';
import { type FailureBudget, notStarted, runWaves } from './wave-rollout.js';
import type { Wave } from './waves.js';

/** What the injected handoff function reports for one attempt. */
export interface AttemptResult<S = unknown> {
  readonly outcome: AttemptOutcome;
  readonly error?: string;
  readonly failedStep?: string;
  /** The engine's own summary (core's HandoffSummary for the local engine). */
  readonly summary?: S;
}

/** Options of {@link runFleet}. */
export interface RunFleetOptions<T extends { readonly name: string }, S> {
  /** The waves, in order; each cluster in one wave. */
  readonly waves: readonly Wave<T>[];
  /** Handoffs at once within a wave. */
  readonly concurrency: number;
  /** Failed clusters tolerated; one more halts the run. */
  readonly budget: number;
  /** Extra attempts per cluster. */
  readonly retries: number;
  /** Pause before retry n is n × this, in ms. @default 5000 */
  readonly retryDelayMs?: number;
  readonly clock: Clock;
  /**
   * Hands off one cluster (one attempt). Each cluster runs core's `runHandoff` (or a shard of the Job engine), which
   * resumes what a killed run left. A throw counts as a failed attempt.
   */
  readonly handoff: (
    target: T,
    ctx: { readonly attempt: number; readonly signal: AbortSignal },
  ) => Promise<AttemptResult<S>>;
  /** SIGINT/SIGTERM: nothing new starts; running handoffs get the signal (they still revoke, prove and record). */
  readonly signal?: AbortSignal;
  readonly onEvent?: (event: FleetProgressEvent) => void;
}

/**
 * Runs a fleet: waves strictly in order (wave n+1 starts only when wave n has finished and the budget holds), at most
 * `concurrency` handoffs at once within a wave, each cluster retried up to `retries` times. A cluster that failed
 * every attempt counts against the budget; when failures exceed it, nothing new starts (no new cluster, no retry),
 * the running handoffs finish, and the run ends `halted` listing the clusters never started.
 */
export async function runFleet<T extends { readonly name: string }, S>(
  options: RunFleetOptions<T, S>,
): Promise<FleetResult<S>> {
  const { onEvent, ...rest } = options;
  return runWaves({
    ...rest,
    ...(onEvent ? { onEvent } : {}),
    runWave: (wave, budget) => runWaveInProcess(options, wave, budget, onEvent ?? (() => {})),
  });
}

/** One wave: at most `concurrency` clusters at once, none started once the run halts or aborts. */
async function runWaveInProcess<T extends { readonly name: string }, S>(
  options: RunFleetOptions<T, S>,
  wave: Wave<T>,
  budget: FailureBudget,
  emit: (event: FleetProgressEvent) => void,
): Promise<ClusterResult<S>[]> {
  const isStopped = () => budget.isExceeded || options.signal?.aborted === true;
  const queue = [...wave.clusters];
  const byName = new Map<string, ClusterResult<S>>();
  const worker = async () => {
    for (;;) {
      if (isStopped()) return;
      const t = queue.shift();
      if (!t) return;
      const result = await runCluster(options, t, wave.index, isStopped, budget.haltSignal, emit);
      byName.set(t.name, result);
      // Counted as it ends, so that a failure past the budget halts the run mid-wave.
      budget.count(result);
      budget.announceHalt();
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, queue.length) }, worker));
  // Results in the wave's order, whatever order they finished in.
  return wave.clusters.map((t) => byName.get(t.name) ?? notStarted(t, wave));
}

/** One cluster, retried up to `retries` times unless the run stops first. */
async function runCluster<T extends { readonly name: string }, S>(
  options: RunFleetOptions<T, S>,
  target: T,
  wave: number,
  isStopped: () => boolean,
  halted: AbortSignal,
  emit: (event: FleetProgressEvent) => void,
): Promise<ClusterResult<S>> {
  const { clock } = options;
  const signal = options.signal ? AbortSignal.any([options.signal, halted]) : halted;
  const start = clock.monotonicMs();
  let last: AttemptResult<S> = { outcome: 'failed', error: 'not attempted' };
  let attempt = 0;
  for (;;) {
    attempt++;
    emit({ type: 'cluster-started', wave, cluster: target.name, attempt });
    last = await options
      .handoff(target, { attempt, signal: options.signal ?? neverAborted })
      .catch((err: unknown): AttemptResult<S> => ({ outcome: 'failed', error: errorText(err) }));
    const ok = last.outcome === 'handed-off' || last.outcome === 'already-handed-off';
    if (ok || attempt > options.retries || isStopped()) break;
    const delayMs = (options.retryDelayMs ?? 5000) * attempt;
    emit({ type: 'cluster-retrying', wave, cluster: target.name, attempt, error: last.error, delayMs });
    try {
      await clock.sleep(delayMs, signal);
    } catch {
      break;
    }
  }
  const result: ClusterResult<S> = {
    name: target.name,
    wave,
    status: last.outcome,
    attempts: attempt,
    durationMs: Math.round(clock.monotonicMs() - start),
    ...(last.error !== undefined ? { error: last.error } : {}),
    ...(last.failedStep !== undefined ? { failedStep: last.failedStep } : {}),
    ...(last.summary !== undefined ? { summary: last.summary } : {}),
  };
  emit({ type: 'cluster-finished', wave, result });
  return result;
}

const neverAborted = new AbortController().signal;

function errorText(err: unknown): string {
  return err instanceof Error ? err.message.split('\n')[0]! : String(err);
}
