import type { HandoffSummary } from '@baton/core';
import { screenOf } from '@baton/terminal';
import { Listr, ListrLogger, ProcessOutput } from 'listr2';
import { formatStep, type LogRecord, type PlanFacts, STEP_ORDER, type StepState, StepTracker } from './step-tracker.js';

/** Options of {@link createStepView}. */
export interface StepViewOptions {
  /** Where the view writes (stderr for the CLI: stdout stays clean for -o json). */
  readonly out: NodeJS.WriteStream;
  /** A live listr2 view; plain lines (one per finished step) otherwise. @default out.isTTY */
  readonly isTTY?: boolean;
  /** What the plan says before the run (rules, objects): the view shows it from the start. */
  readonly facts?: PlanFacts;
  /** Prefix of every plain line, e.g. the cluster name in a fleet. */
  readonly prefix?: string;
  /** Monotonic clock. @default performance.now */
  readonly nowMs?: () => number;
  /** Columns a line may take. @default the stream's columns on a terminal, else 80 */
  readonly width?: number;
}

/** The step view of one handoff, shared by `baton up`, the demo and (as a row) each fleet cluster. */
export interface StepView {
  /** Pass as core's `onStep` hook. */
  readonly onStep: (step: string) => void;
  /** Pass every log record of the run (see createRunLog's onRecord): key facts appear live. */
  readonly onRecord: (record: LogRecord) => void;
  /** The run ended: final durations and facts from its summary (undefined when it threw). */
  finish(summary: HandoffSummary | undefined): Promise<void>;
  readonly tracker: StepTracker;
}

/**
 * Shows a handoff's steps as they run, each with its duration and key fact (rules computed, objects pushed, revision
 * reached, first 401): a live listr2 list on a terminal, plain lines otherwise.
 */
export function createStepView(o: StepViewOptions): StepView {
  const now = o.nowMs ?? (() => performance.now());
  const tracker = new StepTracker(o.facts);
  const tty = o.isTTY ?? o.out.isTTY === true;
  const width = o.width ?? screenOf(o.out).width;
  if (!tty) {
    const prefix = o.prefix ? `${o.prefix} ` : '';
    const print = (s: StepState | undefined) => {
      if (s) o.out.write(`${prefix}${formatStep(s, width - prefix.length)}\n`);
    };
    return {
      tracker,
      onStep: (step) => print(tracker.enter(step, now())),
      onRecord: (r) => tracker.observe(r),
      async finish(summary) {
        // Plain lines are printed as steps end; the summary then corrects durations, so print the last one only.
        print(tracker.finish(summary, now()));
      },
    };
  }
  // listr2 puts a mark and a space before each title, and wraps a title that reaches the last columns itself.
  return liveView(o, tracker, now, width - 6);
}

function liveView(o: StepViewOptions, tracker: StepTracker, now: () => number, width: number): StepView {
  const waiters = new Map<string, { resolve: () => void; promise: Promise<void> }>();
  const waiter = (step: string) => {
    let w = waiters.get(step);
    if (!w) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      w = { resolve, promise };
      waiters.set(step, w);
    }
    return w;
  };
  let done = false;
  const list = new Listr(
    STEP_ORDER.map((step) => ({
      title: step,
      task: async (_: unknown, task: { title: string; output: string; skip: (m?: string) => void }) => {
        const started = waiter(`start:${step}`).promise;
        await Promise.race([started, waiter('done').promise]);
        if (!tracker.steps.some((s) => s.step === step)) {
          task.skip(`${step} (not needed)`);
          return;
        }
        const ticker = setInterval(() => {
          const s = tracker.steps.find((x) => x.step === step);
          if (s?.durationMs === undefined && s)
            task.title = formatStep({ ...s, durationMs: now() - s.startedMs }, width);
        }, 200);
        await Promise.race([waiter(`end:${step}`).promise, waiter('done').promise]);
        clearInterval(ticker);
        const s = tracker.steps.find((x) => x.step === step)!;
        task.title = formatStep(s, width);
      },
    })),
    {
      // Every step waits for its own start, so a step a run skips (cleanup on a handed-off cluster) blocks nothing.
      concurrent: true,
      exitOnError: false,
      // The caller chose the live view because its stream is a terminal (stdout may be piped for -o json).
      fallbackRendererCondition: false,
      silentRendererCondition: false,
      rendererOptions: {
        logger: new ListrLogger({ processOutput: new ProcessOutput(o.out, o.out) }),
        // A step the run did not need shows as one line, `↓ validate (not needed)`, not as a warning over it.
        collapseSkips: true,
      },
    },
  );
  const running = list.run().catch(() => {});
  const signal = (s: StepState | undefined) => {
    if (s) waiter(`end:${s.step}`).resolve();
  };
  return {
    tracker,
    onStep: (step) => {
      signal(tracker.enter(step, now()));
      waiter(`start:${step}`).resolve();
    },
    onRecord: (r) => tracker.observe(r),
    async finish(summary) {
      if (done) return;
      done = true;
      signal(tracker.finish(summary, now()));
      for (const s of tracker.steps) waiter(`end:${s.step}`).resolve();
      waiter('done').resolve();
      await running;
    },
  };
}
