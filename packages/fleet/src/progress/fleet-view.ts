import { formatDuration, formatStep, type LogRecord, type PlanFacts, StepTracker } from '@baton/progress';
import { Listr, ListrLogger, ProcessOutput } from 'listr2';
import type { ClusterResult, FleetProgressEvent, FleetResult } from '../fleet-result.js';
import type { Wave } from '../waves.js';

/** Options of {@link createFleetView}. */
export interface FleetViewOptions {
  readonly out: NodeJS.WriteStream;
  /** A live listr2 view per wave and cluster; plain lines otherwise. @default out.isTTY */
  readonly isTTY?: boolean;
  readonly waves: readonly Wave<{ readonly name: string }>[];
  /** Failed clusters tolerated. */
  readonly budget: number;
  /** Each cluster's plan facts (rules, objects), when known. */
  readonly facts?: (cluster: string) => PlanFacts | undefined;
  /** Show each cluster's steps as plain lines (off for very large fleets). @default true */
  readonly steps?: boolean;
  readonly nowMs?: () => number;
}

/** The live view of a fleet run: one row per cluster (its current step and key fact), grouped by wave, with the budget. */
export interface FleetView {
  /** Pass as runFleet's onEvent. */
  readonly onEvent: (e: FleetProgressEvent) => void;
  /** Core's onStep hook for one cluster's handoff. */
  onStep(cluster: string, step: string): void;
  /** A log record of the run (records carry `cluster`). */
  onRecord(record: LogRecord): void;
  close(result: FleetResult | undefined): Promise<void>;
}

/** `failed 1 of budget 2`. */
export function budgetText(b: FleetResult['budget']): string {
  return `failed ${b.failed} of budget ${b.allowed}`;
}

/** A cluster's outcome in one line: `eu-1 handed-off 14.2 s` or `eu-2 failed at takeover (…) after 2 attempts`. */
export function clusterLine(r: ClusterResult): string {
  const attempts = r.attempts > 1 ? ` after ${r.attempts} attempts` : '';
  const why = r.status === 'failed' || r.status === 'aborted' ? ` at ${r.failedStep ?? '?'}: ${r.error ?? ''}` : '';
  return `${r.name} ${r.status}${why} (${formatDuration(r.durationMs)}${attempts})`;
}

/**
 * A fleet's progress: on a terminal a listr2 list per wave with a row per cluster and the budget in the wave's title
 * ("failed 1 of budget 2"); otherwise plain lines: wave start and end, each cluster's steps (prefixed with its name)
 * and its outcome.
 */
export function createFleetView(o: FleetViewOptions): FleetView {
  const now = o.nowMs ?? (() => performance.now());
  const trackers = new Map<string, StepTracker>();
  const tracker = (c: string) => {
    let t = trackers.get(c);
    if (!t) {
      t = new StepTracker(o.facts?.(c));
      trackers.set(c, t);
    }
    return t;
  };
  const budget = { allowed: o.budget, failed: 0 };
  const tty = o.isTTY ?? o.out.isTTY === true;
  if (!tty) return plainFleetView(o, tracker, budget, now);
  return liveFleetView(o, tracker, budget, now);
}

/** Plain lines for a log or a pipe: wave start and end, each cluster's steps (prefixed with its name), outcomes. */
function plainFleetView(
  o: FleetViewOptions,
  tracker: (c: string) => StepTracker,
  budget: { allowed: number; failed: number },
  now: () => number,
): FleetView {
  const line = (s: string) => o.out.write(`${s}\n`);
  const showSteps = o.steps ?? true;
  const clusterFinished = (r: ClusterResult) => {
    if (r.status === 'failed' || r.status === 'aborted') budget.failed++;
    const last = tracker(r.name).finish(undefined, now());
    if (last && showSteps) line(`  [${r.name}] ${formatStep(last)}`);
    line(clusterLine(r));
  };
  return {
    onEvent(e) {
      switch (e.type) {
        case 'wave-started':
          line(
            `wave ${e.wave + 1}/${o.waves.length} ${e.name}: ${e.clusters.length} cluster(s); ${budgetText(budget)}`,
          );
          break;
        case 'cluster-retrying':
          line(
            `${e.cluster} attempt ${e.attempt} failed (${e.error ?? '?'}); retrying in ${formatDuration(e.delayMs)}`,
          );
          break;
        case 'cluster-finished':
          clusterFinished(e.result);
          break;
        case 'wave-finished':
          line(`wave ${e.wave + 1}/${o.waves.length} ${e.name} finished; ${budgetText(e.budget)}`);
          break;
        case 'halted':
          line(`halted: ${e.reason}; nothing new starts, running handoffs finish`);
          break;
      }
    },
    onStep(cluster, step) {
      const ended = tracker(cluster).enter(step, now());
      if (ended && showSteps) line(`  [${cluster}] ${formatStep(ended)}`);
    },
    onRecord(r) {
      if (typeof r.cluster === 'string') tracker(r.cluster).observe(r);
    },
    async close() {},
  };
}

function liveFleetView(
  o: FleetViewOptions,
  tracker: (c: string) => StepTracker,
  budget: { allowed: number; failed: number },
  now: () => number,
): FleetView {
  const signals = new Map<string, { resolve: () => void; promise: Promise<void> }>();
  const signal = (key: string) => {
    let s = signals.get(key);
    if (!s) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      s = { resolve, promise };
      signals.set(key, s);
    }
    return s;
  };
  const results = new Map<string, ClusterResult>();
  const total = o.waves.length;
  type Task = { title: string; skip: (m?: string) => void; newListr: (...a: never[]) => unknown };
  const list = new Listr(
    o.waves.map((w) => ({
      title: `wave ${w.index + 1}/${total} ${w.name} (${w.clusters.length})`,
      task: async (_: unknown, task: Task) => {
        await Promise.race([signal(`wave:${w.index}`).promise, signal('closed').promise]);
        if (!signals.has(`started:${w.index}`)) {
          task.skip(`wave ${w.index + 1}/${total} ${w.name}: not started (${budgetText(budget)})`);
          return;
        }
        const waveTicker = setInterval(() => {
          task.title = `wave ${w.index + 1}/${total} ${w.name} (${w.clusters.length}) · ${budgetText(budget)}`;
        }, 250);
        const sub = new Listr(
          w.clusters.map((c) => ({
            title: c.name,
            task: async (_ctx: unknown, ct: { title: string; skip: (m?: string) => void }) => {
              await Promise.race([signal(`cluster:${c.name}`).promise, signal(`wave-end:${w.index}`).promise]);
              if (!signals.has(`cluster:${c.name}`)) {
                ct.skip(`${c.name} not started`);
                return;
              }
              const t = tracker(c.name);
              const tick = setInterval(() => {
                const s = t.current;
                if (s)
                  ct.title = `${c.name}  ${s.step} ${formatDuration(now() - s.startedMs)}${s.fact ? `  ${s.fact}` : ''}`;
              }, 200);
              await signal(`done:${c.name}`).promise;
              clearInterval(tick);
              const r = results.get(c.name)!;
              ct.title = clusterLine(r);
              if (r.status === 'failed' || r.status === 'aborted') throw new Error(clusterLine(r));
            },
          })),
          { concurrent: true, exitOnError: false },
        );
        try {
          await sub.run();
        } finally {
          clearInterval(waveTicker);
          task.title = `wave ${w.index + 1}/${total} ${w.name} (${w.clusters.length}) · ${budgetText(budget)}`;
        }
      },
    })),
    {
      concurrent: false,
      exitOnError: false,
      // The caller chose the live view because its stream is a terminal (stdout may be piped for -o json).
      fallbackRendererCondition: false,
      silentRendererCondition: false,
      rendererOptions: {
        logger: new ListrLogger({ processOutput: new ProcessOutput(o.out, o.out) }),
        collapseSubtasks: false,
      },
    },
  );
  const running = list.run().catch(() => {});
  return {
    onEvent(e) {
      if (e.type === 'wave-started') {
        signal(`started:${e.wave}`);
        signal(`wave:${e.wave}`).resolve();
      } else if (e.type === 'cluster-started') signal(`cluster:${e.cluster}`).resolve();
      else if (e.type === 'cluster-finished') {
        if (e.result.status === 'failed' || e.result.status === 'aborted') budget.failed++;
        tracker(e.result.name).finish(undefined, now());
        results.set(e.result.name, e.result);
        signal(`done:${e.result.name}`).resolve();
      } else if (e.type === 'wave-finished') signal(`wave-end:${e.wave}`).resolve();
    },
    onStep(cluster, step) {
      tracker(cluster).enter(step, now());
    },
    onRecord(r) {
      if (typeof r.cluster === 'string') tracker(r.cluster).observe(r);
    },
    async close() {
      for (const w of o.waves) {
        signal(`wave:${w.index}`).resolve();
        signal(`wave-end:${w.index}`).resolve();
      }
      signal('closed').resolve();
      await running;
    },
  };
}
