import type { HandoffSummary } from '@baton/core';
import { shorten } from '@baton/terminal';

/** The steps of a handoff in the order core runs them (`HandoffStep` in @baton/core). */
export const STEP_ORDER = [
  'validate',
  'preflight',
  'cleanup',
  'confine',
  'mint',
  'scope-check',
  'push',
  'takeover',
  'revoke',
  'prove',
  'repair',
  'record',
] as const;

/** One step as the view shows it. */
export interface StepState {
  readonly step: string;
  /** Monotonic ms when it started. */
  readonly startedMs: number;
  /** How long it took, once it ended. */
  durationMs: number | undefined;
  /** The step's key fact: rules computed, objects pushed, revision reached, first 401. */
  fact: string | undefined;
}

/** What the view knows of a plan before the run (the same numbers core computes from the same manifests). */
export interface PlanFacts {
  /** RBAC rules the bootstrap credential gets. */
  readonly rules: number;
  /** Objects the push applies. */
  readonly objects: number;
  /** The declared revision, when the plan pins one. */
  readonly revision?: string;
}

/** One pino log record, as parsed from a JSON line. */
export type LogRecord = Readonly<Record<string, unknown>> & { readonly msg?: string };

/**
 * The steps of one handoff with their durations and key facts, fed by core's `onStep` hook, the run's log records
 * and finally its summary. Pure: the caller supplies monotonic times.
 */
export class StepTracker {
  readonly steps: StepState[] = [];
  readonly #facts: PlanFacts | undefined;
  #revision: string | undefined;

  constructor(facts?: PlanFacts) {
    this.#facts = facts;
    this.#revision = facts?.revision;
  }

  /** The step running now (the last one entered that has not ended). */
  get current(): StepState | undefined {
    const last = this.steps.at(-1);
    return last && last.durationMs === undefined ? last : undefined;
  }

  /** Core entered `step` at `nowMs`: the previous step ended then. Returns the step that ended, if any. */
  enter(step: string, nowMs: number): StepState | undefined {
    const ended = this.#end(nowMs);
    this.steps.push({ step, startedMs: nowMs, durationMs: undefined, fact: this.#planFact(step) });
    return ended;
  }

  /** Takes the key fact a log record carries, for the step it belongs to. Returns the step whose fact changed. */
  observe(record: LogRecord): StepState | undefined {
    const fact = factOf(record, this.#revision);
    if (!fact) return undefined;
    const s = [...this.steps].reverse().find((x) => x.step === fact.step);
    if (!s) return undefined;
    s.fact = fact.text;
    return s;
  }

  /** The run ended: the last step ends at `nowMs`, and durations and facts come from the summary where it has them. */
  finish(summary: HandoffSummary | undefined, nowMs: number): StepState | undefined {
    const ended = this.#end(nowMs);
    if (!summary) return ended;
    this.#revision = summary.revision ?? this.#revision;
    for (const s of this.steps) {
      const d = summary.stepDurationsMs[s.step];
      if (d !== undefined) s.durationMs = d;
      const fact = summaryFact(s.step, summary);
      if (fact) s.fact = fact;
    }
    return ended;
  }

  #end(nowMs: number): StepState | undefined {
    const cur = this.current;
    if (cur) cur.durationMs = Math.max(0, Math.round(nowMs - cur.startedMs));
    return cur;
  }

  #planFact(step: string): string | undefined {
    if (!this.#facts) return undefined;
    if (step === 'validate') return `${this.#facts.rules} rules computed`;
    if (step === 'push') return `${this.#facts.objects} objects`;
    return undefined;
  }
}

/** The key fact of a log record core writes, by its constant message. */
function factOf(r: LogRecord, revision: string | undefined): { step: string; text: string } | undefined {
  switch (r.msg) {
    case 'cluster already handed off':
      return { step: 'preflight', text: `already handed off by run ${String(r.receiptRunId)}` };
    case 'removed bootstrap leftovers of an earlier run':
      return { step: 'cleanup', text: `removed ${String(r.deleted)} leftovers of run ${String(r.leftoverRunId)}` };
    case 'confined the bootstrap identity to the plan':
      return { step: 'confine', text: `admission policy ${String(r.policy)} (${String(r.validations)} rules)` };
    case 'closed the write window':
      return { step: 'takeover', text: `write window closed after ${String(r.writeWindowSeconds)} s` };
    case 'minted bootstrap credential':
      return { step: 'mint', text: `${String(r.subject)} until ${String(r.expiresAt).slice(11, 19)}` };
    case 'controller took over':
      return {
        step: 'takeover',
        text: `revision ${revision ? revision.slice(0, 12) : '?'} reached after ${String(r.readinessSeconds)} s`,
      };
    case 'revoked bootstrap credential':
      return { step: 'revoke', text: `${String(r.deleted)} objects deleted` };
    case 'proved revocation':
      return { step: 'prove', text: `first 401 after ${String(r.proofWaitSeconds)} s` };
    case 'recorded handoff':
      return { step: 'record', text: `audit event #${String(r.auditIndex)}` };
    default:
      return undefined;
  }
}

function summaryFact(step: string, s: HandoffSummary): string | undefined {
  switch (step) {
    case 'validate':
      return s.credential ? `${s.credential.rules.length} rules computed` : undefined;
    case 'push':
      return s.takeover
        ? `${s.takeover.ownedObjects.length + s.takeover.notTakenOver.length + s.takeover.pushOnly.length} objects pushed`
        : undefined;
    case 'takeover':
      return s.readinessSeconds !== undefined && s.revision
        ? `revision ${s.revision.slice(0, 12)} reached after ${s.readinessSeconds} s`
        : undefined;
    case 'prove':
      return s.proof
        ? `first ${s.proof.probeStatus} after ${s.proof.proofWaitSeconds} s; TokenReview authenticated=${s.proof.tokenReviewAuthenticated}`
        : undefined;
    case 'record':
      return s.audit ? `audit event #${s.audit.index}` : undefined;
    default:
      return undefined;
  }
}

/** `1.2 s`, `850 ms`, `2 min 5 s`. */
export function formatDuration(ms: number | undefined): string {
  if (ms === undefined) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 120) return `${s.toFixed(1)} s`;
  return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

/**
 * One finished step as a plain line: `push         0.4 s   12 objects pushed`; with `width`, the fact is shortened in
 * the middle so the line fits it (an identity keeps both ends).
 */
export function formatStep(s: StepState, width?: number): string {
  const head = `${s.step.padEnd(12)} ${formatDuration(s.durationMs).padStart(9)}`;
  if (!s.fact) return head;
  const room = width === undefined ? s.fact.length : Math.max(10, width - head.length - 3);
  return `${head}   ${shorten(s.fact, room)}`;
}
