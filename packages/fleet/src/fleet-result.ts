// What a fleet run reports, whichever engine ran it (in-process or Kubernetes Jobs).

/** How one attempt at a cluster ended. `already-handed-off`: its receipt said so; nothing was minted. */
export type AttemptOutcome = 'handed-off' | 'already-handed-off' | 'failed' | 'aborted';

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

/** The process exit code of a fleet run: 0 all handed off, 3 failures within budget, 1 halted or aborted. */
export function fleetExitCode(outcome: FleetOutcome): 0 | 1 | 3 {
  if (outcome === FleetOutcome.succeeded) return 0;
  if (outcome === FleetOutcome.partial) return 3;
  return 1;
}
