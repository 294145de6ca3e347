import type { DecodedEntry, DecodedFleetEntry } from './read-entries.js';
import type { VerifyResult } from './verify-result.js';

/** One handoff as the report shows it (times in epoch ms). */
export interface HandoffSummary {
  readonly index: number;
  readonly runId: string;
  readonly cluster: string;
  readonly outcome: 'handed-off' | 'failed' | 'aborted' | 'tampered';
  readonly failedStep: string | undefined;
  readonly error: string | undefined;
  readonly actor: string;
  readonly startedMs: number;
  readonly finishedMs: number;
  readonly revision: string;
  readonly credential:
    | {
        readonly issuedMs: number;
        readonly expiresMs: number;
        readonly revokedMs: number | null;
        readonly liveSeconds: number;
      }
    | undefined;
  /** When the pull controller reported ready. */
  readonly readyMs: number | undefined;
  /** Revocation proof: TokenReview said unauthenticated and a direct request got 401. */
  readonly revocationProven: boolean | undefined;
}

/** Per-cluster totals. */
export interface ClusterSummary {
  readonly name: string;
  readonly handoffs: number;
  readonly failed: number;
  readonly lastOutcome: HandoffSummary['outcome'];
  readonly lastFinishedMs: number;
}

/** One wave of a fleet rollout as the report shows it. */
export interface FleetWaveSummary {
  readonly index: number;
  readonly name: string;
  readonly clusters: readonly { readonly name: string; readonly status: string | undefined }[];
  readonly handedOff: number;
  readonly failed: number;
  readonly notStarted: number;
}

/** One fleet run: its `fleet-started` event, and its `fleet-finished` event once it is in the log. */
export interface FleetRunSummary {
  readonly fleetRunId: string;
  readonly fleet: string;
  readonly engine: string;
  readonly shard: string | undefined;
  readonly actor: string;
  readonly startedMs: number;
  readonly finishedMs: number | undefined;
  /** `succeeded`, `partial`, `halted`, `aborted`; undefined while no fleet-finished event is in the log. */
  readonly outcome: string | undefined;
  readonly budget: { readonly allowed: number; readonly failed: number | undefined };
  readonly concurrency: number;
  readonly waves: readonly FleetWaveSummary[];
}

/** Everything the HTML report shows. */
export interface ReportModel {
  readonly log: string;
  readonly generatedAt: string;
  readonly totals: {
    readonly handoffs: number;
    readonly handedOff: number;
    readonly failed: number;
    readonly aborted: number;
  };
  readonly liveSeconds: { readonly median: number; readonly p95: number; readonly max: number } | undefined;
  readonly clusters: readonly ClusterSummary[];
  /** The most recent handoffs, oldest first. */
  readonly recent: readonly HandoffSummary[];
  /** The most recent fleet runs (rollout per wave), oldest first. */
  readonly fleetRuns: readonly FleetRunSummary[];
  readonly verification: VerifyResult | undefined;
}

const FLEET_RUNS_SHOWN = 20;

/** Options of {@link ReportBuilder}. */
export interface ReportBuilderOptions {
  /** Handoffs shown in detail (the most recent). @default 300 */
  readonly recent?: number;
}

/**
 * Folds a stream of decoded entries into a {@link ReportModel} with bounded memory: totals and per-cluster counts
 * for the whole log, details for the most recent handoffs, and every credential's live seconds (8 bytes each) for
 * the percentiles.
 */
export class ReportBuilder {
  readonly #recentLimit: number;
  readonly #recent: HandoffSummary[] = [];
  readonly #clusters = new Map<
    string,
    { handoffs: number; failed: number; lastOutcome: HandoffSummary['outcome']; lastFinishedMs: number }
  >();
  #live = new Float64Array(1024);
  #liveCount = 0;
  #totals = { handoffs: 0, handedOff: 0, failed: 0, aborted: 0 };
  readonly #fleetRuns = new Map<string, FleetRunSummary>();

  constructor(options: ReportBuilderOptions = {}) {
    this.#recentLimit = options.recent ?? 300;
  }

  /** Adds one entry. */
  add(decoded: DecodedEntry): void {
    const r = decoded.statement.predicate;
    const ms = (iso: string) => Date.parse(iso);
    const summary: HandoffSummary = {
      index: decoded.index,
      runId: r.runId,
      cluster: r.cluster.name,
      outcome: r.outcome,
      failedStep: r.failedStep,
      error: r.error,
      actor: `${r.actor.user} via ${r.actor.via}`,
      startedMs: ms(r.startedAt),
      finishedMs: ms(r.finishedAt),
      revision: r.plan.pull.source.revision,
      credential: r.credential && {
        issuedMs: ms(r.credential.issuedAt),
        expiresMs: ms(r.credential.expiresAt),
        revokedMs: r.credential.revokedAt === null ? null : ms(r.credential.revokedAt),
        liveSeconds: r.credential.liveSeconds,
      },
      readyMs: r.readiness ? ms(r.readiness.controllerReadyAt) : undefined,
      revocationProven: r.revocation
        ? !r.revocation.tokenReview.authenticated && r.revocation.directRequest.statusCode === 401
        : undefined,
    };
    this.#totals.handoffs++;
    if (r.outcome === 'handed-off') this.#totals.handedOff++;
    else if (r.outcome === 'failed' || r.outcome === 'tampered') this.#totals.failed++;
    else this.#totals.aborted++;
    const c = this.#clusters.get(summary.cluster) ?? {
      handoffs: 0,
      failed: 0,
      lastOutcome: r.outcome,
      lastFinishedMs: 0,
    };
    c.handoffs++;
    if (r.outcome !== 'handed-off') c.failed++;
    if (summary.finishedMs >= c.lastFinishedMs) {
      c.lastFinishedMs = summary.finishedMs;
      c.lastOutcome = r.outcome;
    }
    this.#clusters.set(summary.cluster, c);
    if (summary.credential) this.#pushLive(summary.credential.liveSeconds);
    this.#recent.push(summary);
    // Trim in batches: shifting one element per entry would be O(n²) over a million entries.
    if (this.#recent.length >= this.#recentLimit * 2) this.#recent.splice(0, this.#recent.length - this.#recentLimit);
  }

  /** Adds a fleet event: `fleet-started` opens a rollout, `fleet-finished` fills in how each cluster ended. */
  addFleet(decoded: DecodedFleetEntry): void {
    const r = decoded.statement.predicate;
    const prev = this.#fleetRuns.get(r.fleetRunId);
    const waves = r.waves.map((w) => {
      const clusters = w.clusters.map((c) => ({ name: c.name, status: c.status }));
      const count = (s: string) => clusters.filter((c) => c.status === s).length;
      return {
        index: w.index,
        name: w.name,
        clusters,
        handedOff: count('handed-off') + count('already-handed-off'),
        failed: count('failed') + count('aborted'),
        notStarted: count('not-started'),
      };
    });
    this.#fleetRuns.delete(r.fleetRunId);
    this.#fleetRuns.set(r.fleetRunId, {
      fleetRunId: r.fleetRunId,
      fleet: r.fleet.name,
      engine: r.engine,
      shard: r.shard ? `${r.shard.index}/${r.shard.count}` : undefined,
      actor: `${r.actor.user} via ${r.actor.via}`,
      startedMs: prev?.startedMs ?? Date.parse(r.startedAt),
      finishedMs: r.finishedAt ? Date.parse(r.finishedAt) : undefined,
      outcome: r.outcome,
      budget: { allowed: r.policy.failureBudget, failed: r.failed },
      concurrency: r.policy.concurrency,
      waves,
    });
    // Bounded like the handoffs: a report shows the latest rollouts.
    if (this.#fleetRuns.size > FLEET_RUNS_SHOWN) this.#fleetRuns.delete(this.#fleetRuns.keys().next().value!);
  }

  /** Builds the model; `verification` is the result of verifyLog, when keys were given. */
  build(log: string, generatedAt: Date, verification?: VerifyResult): ReportModel {
    const live = this.#live.slice(0, this.#liveCount).sort();
    const pct = (p: number) => live[Math.min(live.length - 1, Math.floor(p * live.length))]!;
    return {
      log,
      generatedAt: generatedAt.toISOString(),
      totals: { ...this.#totals },
      liveSeconds: live.length > 0 ? { median: pct(0.5), p95: pct(0.95), max: live[live.length - 1]! } : undefined,
      clusters: [...this.#clusters.entries()]
        .map(([name, c]) => ({ name, ...c }))
        .sort((a, b) => b.lastFinishedMs - a.lastFinishedMs),
      recent: this.#recent.slice(-this.#recentLimit),
      fleetRuns: [...this.#fleetRuns.values()],
      verification,
    };
  }

  #pushLive(seconds: number): void {
    if (this.#liveCount === this.#live.length) {
      const grown = new Float64Array(this.#live.length * 2);
      grown.set(this.#live);
      this.#live = grown;
    }
    this.#live[this.#liveCount++] = seconds;
  }
}
