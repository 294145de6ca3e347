import { BatonError, TamperingError, TimeoutError } from '@baton/errors';
import type {
  BootstrapIdentity,
  BootstrapIdentityRef,
  BootstrapRules,
  ConfinedObject,
  Confinement,
  HandoffLock,
  PushedObjectMismatch,
  TokenReviewResult,
} from '@baton/kube';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { HandoffPlan } from '../handoff-plan.js';
import type { ImageCheck } from '../images/check-images.js';
import { Journal, type JournalStore } from '../journal.js';
import type { ManifestSet } from '../manifest-set.js';
import type { Receipt } from '../receipt.js';
import type { TakeoverState } from '../takeover.js';
import { type HandoffDeps, HandoffStep, type RepairSummary } from './types.js';

/** What the post-close check found rewritten during the push window, and what the repair did about it. */
export interface TamperingState {
  readonly detectedAt: Date;
  /** Monotonic ms of the detection: the repair's time is counted from it. */
  readonly detectedMs: number;
  readonly mismatches: readonly PushedObjectMismatch[];
  /** Set once the repair ran (repaired, or stopped). */
  repair?: RepairSummary;
}

/** Options of a {@link HandoffRun}. */
export interface HandoffRunOptions {
  /**
   * The run whose tampered objects this run pushes again (a repair): its push takes the planned fields back from
   * whoever wrote them (server-side apply with force), under its own confinement.
   */
  readonly repairOf?: string;
}

/** The confinement of this run's identity, as far as it got. */
export interface ConfinementState {
  readonly plan: Confinement;
  /**
   * What each planned object must hold once pushed (Secret values included, in memory only): the post-close check
   * compares the cluster with it.
   */
  readonly expected: readonly ConfinedObject[];
  /** Set once the policy and binding were created (a failed install may have left the policy alone). */
  installedAt?: Date;
  probeDenied: boolean;
  /** When a planned write by the token was first refused after the push (the end of the write window). */
  closedAt?: Date;
  /**
   * When the token was first denied `get` on the planned Secrets after its bindings were deleted (the end of its
   * privilege: it may still authenticate until the revocation is proven, but is authorized for nothing of the plan).
   */
  privilegeEndedAt?: Date;
  removedAt?: Date;
  /** Milliseconds of the live window spent on the probe outside the plan, and on closing the write window. */
  probeMs?: number;
  closeMs?: number;
  /** Milliseconds waited, before the token existed, until the policy was active. */
  activeWaitMs?: number;
  /** Why the policy was kept, when it was. */
  keptBecause?: string;
  /** When the post-close check found every pushed object as planned, and how many it read. */
  verifiedAt?: Date;
  verifiedObjects?: number;
}

/** The revocation proof: the first 401 and the TokenReview after it. */
export interface ProofState {
  readonly probeStatus: number;
  readonly review: TokenReviewResult;
  readonly revokedAt: Date;
  readonly provedAt: Date;
  readonly proofWaitSeconds: number;
}

/**
 * The state of one handoff run: what each step produced, in the order the steps run. Steps are functions of this
 * state; the driver ({@link driveHandoff}) owns step entry, durations, the journal and the one `finally`.
 */
export class HandoffRun {
  readonly runId: string;
  readonly plan: HandoffPlan;
  readonly deps: HandoffDeps;
  readonly log: Logger;
  readonly clock: Clock;
  readonly journal: JournalStore;
  readonly t0: number;
  readonly startedAt: Date;
  readonly durations: Record<string, number> = {};
  current: HandoffStep = 'validate';
  private stepStart: number;
  private isStepOpen = true;
  private stepFact: string | undefined;

  // How far the run got, fact by fact, for revoke, prove, record and the summary (the steps themselves take what
  // they need from the step before: ./phases.ts).
  // validate
  set: ManifestSet | undefined;
  /** The credential's rules: for the whole set, or for the part the run pushes (./phases.ts Scoped). */
  rules: BootstrapRules | undefined;
  /** How the push set's images were verified (before anything was minted). */
  images: ImageCheck | undefined;
  // preflight
  operatorName = '';
  lock: HandoffLock | undefined;
  // cleanup
  receipt: Receipt | undefined;
  revision: string | undefined;
  readonly leftoversRemoved: string[] = [];
  readonly suspicious: string[] = [];
  // confine, mint
  ref: BootstrapIdentityRef | undefined;
  confinement: ConfinementState | undefined;
  identity: BootstrapIdentity | undefined;
  issuedMs: number | undefined;
  // takeover
  takeover: TakeoverState | undefined;
  readinessSeconds: number | undefined;
  controllerReadyAt: Date | undefined;
  // how the pushing part ended (the ending part's outcomes are values: ./phases.ts Ending)
  failure: unknown;
  failedStep: string | undefined;
  /** Set when the post-close check found pushed objects rewritten (the run then repairs them or stops). */
  tampering: TamperingState | undefined;
  /** The run this one repairs, when it is a repair. */
  readonly repairOf: string | undefined;

  /** Aborted by the push budget, a lost lock or the caller's signal: stops the pushing part, never revoke. */
  readonly signal: AbortSignal;
  readonly budget = new AbortController();
  readonly lockLost = new AbortController();
  /**
   * Aborted when the write window could not be closed after the push, or the post-close check found a pushed object
   * that differs from the plan: revoke at once.
   */
  readonly windowNotClosed = new AbortController();
  /** Closing the write window, started at the end of the push. */
  closing: Promise<void> | undefined;
  private readonly budgetTimer = new AbortController();

  constructor(plan: HandoffPlan, deps: HandoffDeps, options: HandoffRunOptions = {}) {
    this.repairOf = options.repairOf;
    this.plan = plan;
    this.deps = deps;
    this.runId = deps.newRunId();
    this.clock = deps.clock;
    this.log = deps.log.child({ runId: this.runId, cluster: plan.cluster.name });
    this.journal = deps.journal ?? new Journal(plan.journalDir, plan.cluster.name);
    this.t0 = this.clock.monotonicMs();
    this.stepStart = this.t0;
    this.startedAt = this.clock.now();
    this.signal = AbortSignal.any([
      this.budget.signal,
      this.lockLost.signal,
      this.windowNotClosed.signal,
      ...(deps.signal ? [deps.signal] : []),
    ]);
  }

  /**
   * Starts `step`: closes the previous step's duration, journals the transition (before the step acts), logs it and
   * calls the `onStep` hook. Throws what the journal or the hook throws: in the pushing part, that fails the run
   * (which then revokes); {@link enterSafely} is for the steps that must run whatever happens.
   */
  async enter(step: HandoffStep, data?: Record<string, unknown>): Promise<void> {
    this.closeStep();
    this.current = step;
    this.isStepOpen = true;
    await this.journal.write(this.runId, step, this.clock.now(), data);
    this.log.info({ step }, 'step');
    await this.deps.onStep?.(step);
  }

  /** {@link enter} that never throws: a full disk or a failing hook must not skip a revoke. */
  async enterSafely(step: HandoffStep, data?: Record<string, unknown>): Promise<void> {
    this.closeStep();
    this.current = step;
    this.isStepOpen = true;
    this.log.info({ step }, 'step');
    await this.journalSafely(step, data);
    try {
      await this.deps.onStep?.(step);
    } catch (err) {
      this.log.error({ step, err: safeError(err) }, 'step hook failed; the step runs anyway');
    }
  }

  /** Appends to the journal; a failure is logged, never thrown. Returns whether the entry was written. */
  async journalSafely(step: string, data?: Record<string, unknown>, runId = this.runId): Promise<boolean> {
    try {
      await this.journal.write(runId, step, this.clock.now(), data);
      return true;
    } catch (err) {
      this.log.error({ step, err: safeError(err) }, 'could not append to the journal');
      return false;
    }
  }

  /** Starts the push window: a hard budget on the credential's life, counted from its issue. */
  startBudget(): void {
    const budgetMs = this.plan.push.budgetSeconds * 1000 - (this.clock.monotonicMs() - (this.issuedMs ?? 0));
    this.clock
      .sleep(budgetMs, this.budgetTimer.signal)
      .then(() => {
        // Spent waiting for the takeover: what it still waited for is the reason a person needs, not only the budget.
        const waiting =
          this.current === HandoffStep.takeover && this.takeover && !this.takeover.isComplete
            ? `; the controller had not taken over: ${this.takeover.reason.slice(0, 600)}`
            : '';
        this.budget.abort(
          new TimeoutError(
            `push window budget of ${this.plan.push.budgetSeconds} s exceeded (push.budgetSeconds); the bootstrap credential was revoked${waiting}`,
          ),
        );
      })
      .catch(() => {});
  }

  /** Stops the push window's timer (the pushing part is over). */
  stopBudget(): void {
    this.budgetTimer.abort();
  }

  /** The key fact of the running step, for {@link HandoffDeps.onStepDone} (the step view). */
  fact(text: string): void {
    this.stepFact = text;
  }

  /** Records the duration of the step that is running and reports it (once) with its fact. */
  closeStep(): void {
    const ms = Math.round(this.clock.monotonicMs() - this.stepStart);
    this.durations[this.current] = ms;
    this.stepStart = this.clock.monotonicMs();
    if (!this.isStepOpen) return;
    this.isStepOpen = false;
    const fact = this.stepFact;
    this.stepFact = undefined;
    try {
      this.deps.onStepDone?.(this.current, ms, fact);
    } catch (err) {
      this.log.error({ err: safeError(err) }, 'onStepDone hook failed');
    }
  }

  /**
   * Notes how the pushing part failed: the step it was in and the reason (the signal's, for an aborted wait). A
   * rewrite the post-close check found is blamed on that check, whichever step was waiting when it reported.
   */
  fail(err: unknown): void {
    this.failure = this.signal.aborted && (err as Error)?.name === 'AbortError' ? this.signal.reason : err;
    this.failedStep = this.failure instanceof TamperingError ? POST_CLOSE_CHECK : this.current;
    this.log.error({ step: this.current, err: safeError(this.failure) }, 'handoff step failed');
  }

  /** Seconds since the run started. */
  elapsedSeconds(): number {
    return seconds(this.clock.monotonicMs() - this.t0);
  }
}

/** The step name a rewrite found after the close is blamed on (the audit record's `failedStep`). */
export const POST_CLOSE_CHECK = 'post-close-check';

/** A secret-free one-line description of an error. */
export function safeError(err: unknown): string {
  if (err instanceof BatonError || err instanceof Error) return err.message.split('\n').slice(0, 6).join(' ');
  return String(err);
}

/** Milliseconds to seconds, rounded to the millisecond. */
export function seconds(ms: number): number {
  return round(ms / 1000);
}

/** Rounded to three decimals. */
export function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
