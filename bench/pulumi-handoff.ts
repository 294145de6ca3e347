// The handoff part of `pnpm bench:pulumi`: a handoff through `pulumi up` of stacks/local (the demo's default path)
// against `baton up` of the same plan (runHandoff in-process, the demo's `--via cli`). Every sample gets a fresh bed
// (cluster, Git server, pod runner), and the order alternates (pulumi, cli, cli, pulumi, …) so a machine that warms
// up or gets busier during the run favours neither path.
import { appendFileSync, mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { createLogger, type HandoffSummary } from '@baton/core';
import type { HandoffReceipt } from '@baton/pulumi';
import type { HandoffBed } from '@baton/testenv';
import { batonUpInProcess } from '../scripts/demo/baton-up.js';
import { startDemoBed } from '../scripts/demo/bed.js';
import { pulumiUp } from '../scripts/demo/pulumi-up.js';
import { median, round } from './stats.js';

/** The credential's live window through Pulumi may exceed baton up's by this much (issue 11). */
const LIVE_WINDOW_TARGET_SECONDS = 0.5;

type HandoffPath = 'pulumi' | 'cli';

/** One handoff as the benchmark records it. */
interface HandoffSample {
  /** Position in the run (0-based), to see drift. */
  readonly order: number;
  /** Wall time of the whole command: `pulumi up` for pulumi, runHandoff for cli. */
  readonly totalSeconds: number;
  /** The run's own total as its summary says (for pulumi: the part inside the provider). */
  readonly runSeconds: number;
  /** From the command's start until the credential was issued (Pulumi's start-up belongs here). */
  readonly beforeIssueSeconds: number;
  /** From issue until the API server refused the token. */
  readonly liveSeconds: number;
  /** From the refusal until the command returned (prove, record, and for pulumi the engine's finish). */
  readonly afterRevokeSeconds: number;
  readonly readinessSeconds: number | null;
  readonly overheadSeconds: number | null;
  readonly stepDurationsMs: Readonly<Record<string, number>>;
}

type Measured = Omit<HandoffSample, 'order'>;

/** pulumi, cli, cli, pulumi, pulumi, cli, …: each path goes first in half of the pairs. */
export function alternatingOrder(runs: number): HandoffPath[] {
  return Array.from({ length: runs }, (_, r): HandoffPath[] =>
    r % 2 === 0 ? ['pulumi', 'cli'] : ['cli', 'pulumi'],
  ).flat();
}

/**
 * What a run that handed off reports, from the stack's receipt or baton up's summary, with the command's wall time
 * split around the credential's life (issuedAt is the same host's wall clock as `startedAt`).
 */
function measured(startedAt: string, totalSeconds: number, r: HandoffReceipt | HandoffSummary): Measured {
  const c = r.credential!;
  const beforeIssueSeconds = (Date.parse(c.issuedAt) - Date.parse(startedAt)) / 1000;
  return {
    totalSeconds: round(totalSeconds),
    runSeconds: r.totalSeconds,
    beforeIssueSeconds: round(beforeIssueSeconds, 3),
    liveSeconds: c.liveSeconds,
    afterRevokeSeconds: round(totalSeconds - beforeIssueSeconds - c.liveSeconds, 3),
    readinessSeconds: r.readinessSeconds ?? null,
    overheadSeconds: r.overheadSeconds ?? null,
    stepDurationsMs: r.stepDurationsMs,
  };
}

async function viaPulumi(bed: HandoffBed, signal: AbortSignal): Promise<Measured> {
  const up = await pulumiUp(bed, 'baton-controller', bed.side.dir, signal);
  if (up.receipt?.outcome !== 'handed-off' || !up.receipt.credential) {
    throw new Error(`${bed.clusterName}: pulumi up did not hand off: ${up.error ?? up.receipt?.outcome}`);
  }
  return measured(up.startedAt, up.updateSeconds, up.receipt);
}

async function viaCli(bed: HandoffBed, signal: AbortSignal): Promise<Measured> {
  // To a file with synchronous appends, as the Pulumi provider logs: both paths pay the same for their log.
  const logDir = join(bed.side.dir, 'logs');
  mkdirSync(logDir, { recursive: true });
  const logPath = join(logDir, 'baton-up.log');
  const log = createLogger({ destination: { write: (line: string) => appendFileSync(logPath, line) } });
  const startedAt = new Date().toISOString();
  const t0 = performance.now();
  const s = await batonUpInProcess(bed, log, signal);
  const totalSeconds = (performance.now() - t0) / 1000;
  if (s.outcome !== 'handed-off' || !s.credential) {
    throw new Error(`${bed.clusterName}: baton up did not hand off: ${s.outcome}: ${s.error}; log ${logPath}`);
  }
  return measured(startedAt, totalSeconds, s);
}

/** One handoff on a fresh bed; a failed one keeps the bed's files (plan, logs, state copy) and names them. */
async function sample(path: HandoffPath, name: string, signal: AbortSignal): Promise<Measured> {
  const bed = await startDemoBed({ name });
  let ok = false;
  try {
    const m = await (path === 'pulumi' ? viaPulumi(bed, signal) : viaCli(bed, signal));
    ok = true;
    return m;
  } finally {
    await bed.stop({ keepFiles: !ok });
    if (!ok) process.stderr.write(`bench: the failed run's files are in ${bed.side.dir}\n`);
  }
}

function medians(samples: readonly HandoffSample[]) {
  const of = (pick: (s: HandoffSample) => number | null) => {
    const xs = samples.map(pick).filter((x): x is number => x !== null);
    return xs.length > 0 ? round(median(xs)) : null;
  };
  return {
    totalSeconds: of((s) => s.totalSeconds),
    beforeIssueSeconds: of((s) => s.beforeIssueSeconds),
    liveSeconds: of((s) => s.liveSeconds),
    afterRevokeSeconds: of((s) => s.afterRevokeSeconds),
    readinessSeconds: of((s) => s.readinessSeconds),
    runSeconds: of((s) => s.runSeconds),
    overheadSeconds: of((s) => s.overheadSeconds),
  };
}

/**
 * Runs `runs` handoffs through each path, alternating, and returns the `handoff` key of bench/results/pulumi.json.
 * @throws when a handoff does not hand off (its bed's files are kept), or when a bed cannot start.
 */
export async function benchHandoff(runs: number, log: (line: string) => void, signal: AbortSignal) {
  const loadStart = loadavg();
  const samples: Record<HandoffPath, HandoffSample[]> = { pulumi: [], cli: [] };
  const order = alternatingOrder(runs);
  for (const [i, path] of order.entries()) {
    signal.throwIfAborted();
    const m = await sample(path, `bench-${path}-${process.pid}-${i}`, signal);
    samples[path].push({ order: i, ...m });
    log(
      `handoff ${i + 1}/${order.length} via ${path}: total ${m.totalSeconds} s, credential live ${m.liveSeconds} s, readiness ${m.readinessSeconds} s`,
    );
  }
  const pulumi = medians(samples.pulumi);
  const cli = medians(samples.cli);
  // Every sample handed off (else it threw), so each has a total and a live window.
  const liveWindowDifferenceSeconds = round(pulumi.liveSeconds! - cli.liveSeconds!);
  return {
    description:
      'a handoff to baton-controller through `pulumi up` of stacks/local (real engine, the test bed language host, dynamic provider) vs `baton up` of the same plan (runHandoff in-process, as `pnpm demo -- --via cli`); a fresh bed per sample, order pulumi, cli, cli, pulumi, …; totalSeconds is the wall time of `pulumi up` / of runHandoff = beforeIssueSeconds (command start to credential issue) + liveSeconds (issue to first refusal) + afterRevokeSeconds; runSeconds is the run summary’s own total; medians; differences are pulumi median − cli median',
    runs,
    medians: { pulumi, cli },
    addedSeconds: round(pulumi.totalSeconds! - cli.totalSeconds!),
    liveWindowDifferenceSeconds,
    liveWindowTargetSeconds: LIVE_WINDOW_TARGET_SECONDS,
    targetMet: liveWindowDifferenceSeconds <= LIVE_WINDOW_TARGET_SECONDS,
    samples,
    loadAverage: { start: loadStart.map((x) => round(x)), end: loadavg().map((x) => round(x)) },
  };
}
