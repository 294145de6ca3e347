import type { DecodedEntry } from './read-entries.js';
import type { VerifyResult } from './verify-result.js';

/** One handoff as the report shows it (times in epoch ms). */
export interface HandoffSummary {
  readonly index: number;
  readonly runId: string;
  readonly cluster: string;
  readonly outcome: 'handed-off' | 'failed' | 'aborted';
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
  readonly verification: VerifyResult | undefined;
}

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
    else if (r.outcome === 'failed') this.#totals.failed++;
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
