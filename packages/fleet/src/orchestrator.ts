import type { Clock } from '@baton/core';
import type { Wave } from './waves.js';

/** How one attempt at a cluster ended. `already-handed-off`: its receipt said so; nothing was minted. */
export type AttemptOutcome = 'handed-off' | 'already-handed-off' | 'failed' | 'aborted';

/** What the injected handoff function reports for one attempt. */
export interface AttemptResult<S = unknown> {
  readonly outcome: AttemptOutcome;
  readonly error?: string;
  readonly failedStep?: string;
  /** The engine's own summary (core's HandoffSummary for the local engine). */
  readonly summary?: S;
}

/** A cluster's place in the run's result. `not-started`: the budget was spent (or the run aborted) first. */
export type ClusterStatus = AttemptOutcome | 'not-started';

/** How one cluster ended in a fleet run. */
export interface ClusterResult<S = unknown> {
  readonly name: string;
  readonly wave: number;
  readonly status: ClusterStatus;
  /** Attempts made (0 when not started). */
  readonly attempts: number;
  /** From the first attempt's start to the last one's end, in ms. */
  readonly durationMs: number;
  readonly error?: string;
  readonly failedStep?: string;
  readonly summary?: S;
}

/** How a fleet run ended. */
export const FleetOutcome = {
  /** Every cluster handed off (exit 0). */
  succeeded: 'succeeded',
  /** Finished with failures within the budget (exit 3). */
  partial: 'partial',
  /** The budget was exceeded: nothing new started; running handoffs finished (exit 1). */
  halted: 'halted',
  /** SIGINT/SIGTERM: nothing new started; running handoffs revoked and recorded (exit 1). */
  aborted: 'aborted',
} as const;
/** How a fleet run ended. */
export type FleetOutcome = (typeof FleetOutcome)[keyof typeof FleetOutcome];

/** The result of {@link runFleet}. */
export interface FleetResult<S = unknown> {
  readonly outcome: FleetOutcome;
  /** Failures tolerated, and failures so far. Halted when `failed > allowed`. */
  readonly budget: { readonly allowed: number; readonly failed: number };
  readonly waves: readonly {
    readonly index: number;
    readonly name: string;
    readonly clusters: readonly ClusterResult<S>[];
  }[];
  /** Clusters never started (budget spent or aborted), in wave order. */
  readonly notStarted: readonly string[];
  readonly durationMs: number;
}

/** What the orchestrator reports as it goes, for a live view. */
export type FleetProgressEvent =
  | {
      readonly type: 'wave-started';
      readonly wave: number;
      readonly name: string;
      readonly clusters: readonly string[];
    }
  | { readonly type: 'cluster-started'; readonly wave: number; readonly cluster: string; readonly attempt: number }
  | {
      readonly type: 'cluster-retrying';
      readonly wave: number;
      readonly cluster: string;
      readonly attempt: number;
      readonly error: string | undefined;
      readonly delayMs: number;
    }
  | { readonly type: 'cluster-finished'; readonly wave: number; readonly result: ClusterResult }
  | {
      readonly type: 'wave-finished';
      readonly wave: number;
      readonly name: string;
      readonly budget: FleetResult['budget'];
    }
  | { readonly type: 'halted'; readonly budget: FleetResult['budget']; readonly reason: string };

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
  const { clock } = options;
  const emit = options.onEvent ?? (() => {});
  const t0 = clock.monotonicMs();
  const budget = { allowed: options.budget, failed: 0 };
  const stopping = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stopping.signal]) : stopping.signal;
  const isAborted = () => options.signal?.aborted === true;
  const isHalted = () => budget.failed > budget.allowed;
  const waves: { index: number; name: string; clusters: ClusterResult<S>[] }[] = [];
  const notStarted: string[] = [];

  const runCluster = async (target: T, wave: number): Promise<ClusterResult<S>> => {
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
      if (ok || attempt > options.retries || isHalted() || isAborted()) break;
      const delayMs = (options.retryDelayMs ?? 5000) * attempt;
      emit({ type: 'cluster-retrying', wave, cluster: target.name, attempt, error: last.error, delayMs });
      try {
        await clock.sleep(delayMs, signal);
      } catch {
        break;
      }
    }
    const failed = last.outcome === 'failed' || last.outcome === 'aborted';
    if (failed) budget.failed++;
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
    if (failed && isHalted() && !stopping.signal.aborted) {
      stopping.abort();
      emit({
        type: 'halted',
        budget: { ...budget },
        reason: `${budget.failed} cluster(s) failed, more than the failure budget of ${budget.allowed}`,
      });
    }
    return result;
  };

  for (const wave of options.waves) {
    const results: ClusterResult<S>[] = [];
    waves.push({ index: wave.index, name: wave.name, clusters: results });
    if (isHalted() || isAborted()) {
      for (const t of wave.clusters) results.push(notStartedResult(t.name, wave.index));
      notStarted.push(...wave.clusters.map((t) => t.name));
      continue;
    }
    emit({ type: 'wave-started', wave: wave.index, name: wave.name, clusters: wave.clusters.map((t) => t.name) });
    const queue = [...wave.clusters];
    const byName = new Map<string, ClusterResult<S>>();
    const worker = async () => {
      for (;;) {
        if (isHalted() || isAborted()) return;
        const t = queue.shift();
        if (!t) return;
        byName.set(t.name, await runCluster(t, wave.index));
      }
    };
    await Promise.all(Array.from({ length: Math.min(options.concurrency, queue.length) }, worker));
    // Results in the wave's order, whatever order they finished in.
    for (const t of wave.clusters) {
      const r = byName.get(t.name);
      if (r) results.push(r);
      else {
        results.push(notStartedResult(t.name, wave.index));
        notStarted.push(t.name);
      }
    }
    emit({ type: 'wave-finished', wave: wave.index, name: wave.name, budget: { ...budget } });
  }

  const outcome: FleetOutcome = isAborted()
    ? FleetOutcome.aborted
    : isHalted()
      ? FleetOutcome.halted
      : budget.failed > 0
        ? FleetOutcome.partial
        : FleetOutcome.succeeded;
  return { outcome, budget, waves, notStarted, durationMs: Math.round(clock.monotonicMs() - t0) };
}

/** The process exit code of a fleet run: 0 all handed off, 3 failures within budget, 1 halted or aborted. */
export function fleetExitCode(outcome: FleetOutcome): 0 | 1 | 3 {
  if (outcome === FleetOutcome.succeeded) return 0;
  if (outcome === FleetOutcome.partial) return 3;
  return 1;
}

const neverAborted = new AbortController().signal;

function notStartedResult<S>(name: string, wave: number): ClusterResult<S> {
  return { name, wave, status: 'not-started', attempts: 0, durationMs: 0 };
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message.split('\n')[0]! : String(err);
}
