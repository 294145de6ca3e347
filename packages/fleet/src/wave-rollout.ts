import type { Clock } from '@baton/core';
import { type ClusterResult, FleetOutcome, type FleetProgressEvent, type FleetResult } from './fleet-result.js';
import type { Wave } from './waves.js';

/**
 * The failure budget of a fleet run: failed clusters tolerated, and those counted so far. One more than allowed
 * halts the run: {@link haltSignal} aborts, and nothing new starts (no cluster, no retry, no wave).
 */
export class FailureBudget {
  /** Failed clusters tolerated. */
  readonly allowed: number;
  private failedCount = 0;
  private readonly counted = new Set<string>();
  private readonly halting = new AbortController();
  private readonly emit: (event: FleetProgressEvent) => void;

  /**
   * @param allowed failed clusters tolerated.
   * @param emit receives the `halted` event, once.
   */
  constructor(allowed: number, emit: (event: FleetProgressEvent) => void = () => {}) {
    this.allowed = allowed;
    this.emit = emit;
  }

  /** Failed clusters counted so far. */
  get failed(): number {
    return this.failedCount;
  }

  /** Failures still tolerated before the run halts (negative once it has). */
  get left(): number {
    return this.allowed - this.failedCount;
  }

  /** True once the failures exceed the budget. */
  get isExceeded(): boolean {
    return this.failedCount > this.allowed;
  }

  /** Aborts when the run halts, so that waiting retries stop at once. */
  get haltSignal(): AbortSignal {
    return this.halting.signal;
  }

  /** The budget as reported in events and the result. */
  snapshot(): FleetResult['budget'] {
    return { allowed: this.allowed, failed: this.failedCount };
  }

  /**
   * Counts a cluster's result against the budget: a cluster that failed or was aborted counts once, however often it
   * is passed in. Then {@link announceHalt}.
   */
  count(result: Pick<ClusterResult, 'name' | 'status'>): void {
    if (this.counted.has(result.name)) return;
    this.counted.add(result.name);
    if (result.status === 'failed' || result.status === 'aborted') this.failedCount++;
  }

  /** When the budget is exceeded and the run has not halted yet: halts it and emits `halted`. */
  announceHalt(): void {
    if (!this.isExceeded || this.halting.signal.aborted) return;
    this.halting.abort(new Error('the failure budget is exceeded'));
    this.emit({
      type: 'halted',
      budget: this.snapshot(),
      reason: `${this.failedCount} cluster(s) failed, more than the failure budget of ${this.allowed}`,
    });
  }
}

/** Options of {@link runWaves}. */
export interface RunWavesOptions<T extends { readonly name: string }, S> {
  /** The waves, in order; each cluster in one wave. */
  readonly waves: readonly Wave<T>[];
  /** Failed clusters tolerated; one more halts the run. */
  readonly budget: number;
  readonly clock: Clock;
  /** SIGINT/SIGTERM: no new wave starts. */
  readonly signal?: AbortSignal | undefined;
  readonly onEvent?: ((event: FleetProgressEvent) => void) | undefined;
  /**
   * Runs one wave; resolves with a result per cluster, in the wave's order (`not-started` for those it never started).
   * It may count results into `budget` as they come, to halt mid-wave; every result is counted after it anyway.
   */
  readonly runWave: (wave: Wave<T>, budget: FailureBudget) => Promise<readonly ClusterResult<S>[]>;
}

/**
 * The wave logic every engine shares: waves strictly in order, the next one only when the previous has finished and
 * the budget holds; once the budget is exceeded or the run aborted, every cluster of the remaining waves is
 * `not-started`. The outcome: `aborted` (signal), `halted` (budget exceeded), `partial` (failures within budget),
 * else `succeeded`.
 */
export async function runWaves<T extends { readonly name: string }, S>(
  o: RunWavesOptions<T, S>,
): Promise<FleetResult<S>> {
  const t0 = o.clock.monotonicMs();
  const emit = o.onEvent ?? (() => {});
  const budget = new FailureBudget(o.budget, emit);
  const waves: FleetResult<S>['waves'][number][] = [];
  for (const wave of o.waves) {
    if (budget.isExceeded || o.signal?.aborted) {
      waves.push({ index: wave.index, name: wave.name, clusters: wave.clusters.map((t) => notStarted(t, wave)) });
      continue;
    }
    emit({ type: 'wave-started', wave: wave.index, name: wave.name, clusters: wave.clusters.map((t) => t.name) });
    const results = await o.runWave(wave, budget);
    for (const r of results) budget.count(r);
    waves.push({ index: wave.index, name: wave.name, clusters: [...results] });
    emit({ type: 'wave-finished', wave: wave.index, name: wave.name, budget: budget.snapshot() });
    budget.announceHalt();
  }
  const outcome: FleetOutcome = o.signal?.aborted
    ? FleetOutcome.aborted
    : budget.isExceeded
      ? FleetOutcome.halted
      : budget.failed > 0
        ? FleetOutcome.partial
        : FleetOutcome.succeeded;
  return {
    outcome,
    budget: budget.snapshot(),
    waves,
    notStarted: waves.flatMap((w) => w.clusters.filter((c) => c.status === 'not-started').map((c) => c.name)),
    durationMs: Math.round(o.clock.monotonicMs() - t0),
  };
}

/** The result of a cluster never started (the budget was spent, or the run aborted, first). */
export function notStarted<S>(target: { readonly name: string }, wave: Pick<Wave, 'index'>): ClusterResult<S> {
  return { name: target.name, wave: wave.index, status: 'not-started', attempts: 0, durationMs: 0 };
}
