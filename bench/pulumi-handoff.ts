// The handoff part of `pnpm bench:pulumi`, on the packages a user installs: the runtime closure of @baton/cli and
// @baton/pulumi packed and npm-installed into a project outside the repository (@baton/testbed's outside-install.ts), whose
// TypeScript program is compiled with its own tsc. A handoff through `pulumi up` of that project against the
// installed `baton up` of the same plan. Every sample gets a fresh bed (cluster, real node, Git server), and the
// order alternates (pulumi, cli, cli, pulumi, …) so a machine that warms up or gets busier during the run favours
// neither path. The seconds before the mint are split by the language host's and the provider's timestamps.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { HandoffSummary } from '@baton/core';
import type { HandoffReceipt } from '@baton/pulumi';
import {
  installUserPulumiProject,
  type OutsideInstall,
  packPackages,
  runtimeClosure,
  USER_PULUMI_PROJECT,
} from '@baton/testbed';
import type { HandoffBed } from '@baton/testenv/beds';
import { startDemoBed } from '../scripts/demo/bed.js';
import { type PulumiProject, pulumiUp } from '../scripts/demo/pulumi-up.js';
import { median, round } from './stats.js';

const execFileAsync = promisify(execFile);

/** The credential's live window through Pulumi may exceed baton up's by this much (issue 11). */
const LIVE_WINDOW_TARGET_SECONDS = 0.5;
/** `pulumi up` may take this much longer than `baton up` (issue 17). */
const ADDED_SECONDS_TARGET = 5;

/** `pulumi up --yes` (preview, then update), `pulumi up --yes --skip-preview`, and the installed `baton up`. */
type HandoffPath = 'pulumi' | 'pulumiSkipPreview' | 'cli';
const PATHS: readonly HandoffPath[] = ['pulumi', 'pulumiSkipPreview', 'cli'];

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
  /** pulumi only: where beforeIssueSeconds goes (see {@link BeforeMintSplit}). */
  readonly beforeMint?: BeforeMintSplit;
}

/**
 * `pulumi up`'s seconds before the mint, from the language host's and the provider's timestamps: engine start (`pulumi
 * up` started → first language host process started), preview (→ the update's Run arrived: the preview's program run,
 * its check and diff in a dynamic-provider host of its own, and the update's language host; near 0.4 s with
 * --skip-preview), program (→ the update's dynamic-provider host process started: the program loads and registers its
 * resources, the engine checks them and starts the host), provider host (→ `@baton/pulumi/provider` loaded), handoff
 * module (→ the run's module graph loaded on create: @baton/core, the Kubernetes clients, the audit log), handoff
 * (→ the credential issued: plan, preflight, cleanup, confine, mint).
 */
interface BeforeMintSplit {
  readonly engineStartSeconds: number;
  readonly previewSeconds: number;
  readonly programSeconds: number;
  readonly providerHostSeconds: number;
  readonly handoffModuleSeconds: number;
  readonly handoffSeconds: number;
}

type Measured = Omit<HandoffSample, 'order'>;

/** Each round runs every path once, rotated by one per round, so no path always goes first or last. */
export function alternatingOrder(runs: number): HandoffPath[] {
  return Array.from({ length: runs }, (_, r) => PATHS.map((_, i) => PATHS[(i + r) % PATHS.length]!)).flat();
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

/** The installed user project as `pulumiUp` runs it: no Node options, no NODE_PATH, the host's timings to a file. */
function installedProject(installed: OutsideInstall, timingsPath: string): PulumiProject {
  return {
    dir: installed.dir,
    name: USER_PULUMI_PROJECT,
    envOptions: { env: { NODE_OPTIONS: '', NODE_PATH: '', BATON_LANGUAGE_HOST_TIMINGS: timingsPath } },
  };
}

/** Epoch ms of the first or last record of `event` in the language host's timings file (one per host process). */
function hostTiming(timingsPath: string, event: string, which: 'first' | 'last'): number {
  const lines = readFileSync(timingsPath, 'utf8').trim().split('\n');
  const hits = lines.map((l) => JSON.parse(l) as { event: string; at: number }).filter((t) => t.event === event);
  const hit = which === 'first' ? hits[0] : hits.at(-1);
  if (!hit) throw new Error(`${timingsPath} has no ${event} record: is the test bed's language host the one running?`);
  return hit.at;
}

/** The provider's first log line (`provider host`) in the run's log beside the journal. */
function providerTimings(bed: HandoffBed): {
  providerHostStartedAt: string;
  providerLoadedAt: string;
  runLoadedAt: string;
} {
  const logDir = join(bed.side.dir, 'logs');
  const file = readdirSync(logDir).find((f) => f.startsWith('pulumi-'));
  if (!file) throw new Error(`${logDir} holds no provider log`);
  const first = readFileSync(join(logDir, file), 'utf8').split('\n')[0] ?? '';
  return JSON.parse(first) as { providerHostStartedAt: string; providerLoadedAt: string; runLoadedAt: string };
}

async function viaPulumi(
  bed: HandoffBed,
  installed: OutsideInstall,
  signal: AbortSignal,
  skipPreview: boolean,
): Promise<Measured> {
  const timingsPath = join(bed.side.dir, 'language-host-timings.jsonl');
  const up = await pulumiUp(bed, bed.side.dir, signal, installedProject(installed, timingsPath), {
    upArgs: skipPreview ? ['--skip-preview'] : [],
  });
  if (up.receipt?.outcome !== 'handed-off' || !up.receipt.credential) {
    throw new Error(`${bed.clusterName}: pulumi up did not hand off: ${up.error ?? up.receipt?.outcome}`);
  }
  const m = measured(up.startedAt, up.updateSeconds, up.receipt);
  const provider = providerTimings(bed);
  const marks = [
    Date.parse(up.startedAt),
    hostTiming(timingsPath, 'host-started', 'first'),
    hostTiming(timingsPath, 'run', 'last'),
    Date.parse(provider.providerHostStartedAt),
    Date.parse(provider.providerLoadedAt),
    Date.parse(provider.runLoadedAt),
    Date.parse(up.receipt.credential.issuedAt),
  ];
  const between = (i: number) => round((marks[i + 1]! - marks[i]!) / 1000, 3);
  return {
    ...m,
    beforeMint: {
      engineStartSeconds: between(0),
      previewSeconds: between(1),
      programSeconds: between(2),
      providerHostSeconds: between(3),
      handoffModuleSeconds: between(4),
      handoffSeconds: between(5),
    },
  };
}

/** The installed `baton up --plan … -o json`, as a user runs it (its full log goes to a file, as the provider's). */
async function viaCli(bed: HandoffBed, installed: OutsideInstall, signal: AbortSignal): Promise<Measured> {
  const startedAt = new Date().toISOString();
  const t0 = performance.now();
  const { stdout } = await execFileAsync(installed.bin('baton'), ['up', '--plan', bed.side.planPath, '-o', 'json'], {
    cwd: installed.dir,
    env: installed.env,
    signal,
    maxBuffer: 16 * 1024 * 1024,
  });
  const totalSeconds = (performance.now() - t0) / 1000;
  const s = JSON.parse(stdout) as HandoffSummary;
  if (s.outcome !== 'handed-off' || !s.credential) {
    throw new Error(`${bed.clusterName}: baton up did not hand off: ${s.outcome}: ${s.error}`);
  }
  return measured(startedAt, totalSeconds, s);
}

/** One handoff on a fresh bed; a failed one keeps the bed's files (plan, logs, state copy) and names them. */
async function sample(
  path: HandoffPath,
  name: string,
  installed: OutsideInstall,
  signal: AbortSignal,
): Promise<Measured> {
  const bed = await startDemoBed({ name });
  let ok = false;
  try {
    const m = await (path === 'cli'
      ? viaCli(bed, installed, signal)
      : viaPulumi(bed, installed, signal, path === 'pulumiSkipPreview'));
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
  const packDir = join(tmpdir(), `baton-bench-pack-${process.pid}`);
  log('packing @baton/cli and @baton/pulumi and installing them outside the repository…');
  const installed = await installUserPulumiProject(
    await packPackages(runtimeClosure(['@baton/cli', '@baton/pulumi']), packDir),
  );
  const samples: Record<HandoffPath, HandoffSample[]> = { pulumi: [], pulumiSkipPreview: [], cli: [] };
  const order = alternatingOrder(runs);
  try {
    for (const [i, path] of order.entries()) {
      signal.throwIfAborted();
      const m = await sample(path, `bench-${path.toLowerCase()}-${process.pid}-${i}`, installed, signal);
      samples[path].push({ order: i, ...m });
      log(
        `handoff ${i + 1}/${order.length} via ${path}: total ${m.totalSeconds} s, before issue ${m.beforeIssueSeconds} s ${JSON.stringify(m.beforeMint ?? {})}, credential live ${m.liveSeconds} s`,
      );
    }
  } finally {
    await installed.remove();
    await rm(packDir, { recursive: true, force: true });
  }
  const splitOf = (path: HandoffPath) => {
    const of = (pick: (b: BeforeMintSplit) => number) =>
      round(median(samples[path].map((s) => pick(s.beforeMint!))), 3);
    return {
      engineStartSeconds: of((b) => b.engineStartSeconds),
      previewSeconds: of((b) => b.previewSeconds),
      programSeconds: of((b) => b.programSeconds),
      providerHostSeconds: of((b) => b.providerHostSeconds),
      handoffModuleSeconds: of((b) => b.handoffModuleSeconds),
      handoffSeconds: of((b) => b.handoffSeconds),
    };
  };
  const pulumi = medians(samples.pulumi);
  const pulumiSkipPreview = medians(samples.pulumiSkipPreview);
  const cli = medians(samples.cli);
  const against = (p: ReturnType<typeof medians>) => {
    // Every sample handed off (else it threw), so each has a total and a live window.
    const addedSeconds = round(p.totalSeconds! - cli.totalSeconds!);
    const liveWindowDifferenceSeconds = round(p.liveSeconds! - cli.liveSeconds!);
    return {
      addedBeforeIssueSeconds: round(p.beforeIssueSeconds! - cli.beforeIssueSeconds!),
      addedSeconds,
      liveWindowDifferenceSeconds,
      targetMet: liveWindowDifferenceSeconds <= LIVE_WINDOW_TARGET_SECONDS && addedSeconds <= ADDED_SECONDS_TARGET,
    };
  };
  return {
    description:
      'a handoff to baton-controller on the installed packages (the runtime closure of @baton/cli and @baton/pulumi packed and npm-installed outside the repository): `pulumi up --yes` (preview, then update) and `pulumi up --yes --skip-preview` of a user project whose TypeScript program (handoffFromConfig) is compiled with its own tsc (real engine, the test bed language host with typescript: false, dynamic provider; no NODE_OPTIONS, no NODE_PATH) vs the installed `baton up --plan … -o json` as a process; a fresh bed per sample, each round runs the three paths in a rotated order; totalSeconds is the wall time of the command = beforeIssueSeconds (command start to credential issue) + liveSeconds (issue to first refusal) + afterRevokeSeconds; beforeMint splits pulumi’s beforeIssueSeconds: engine start → first language host start → the update’s Run (the preview) → the update’s dynamic-provider host start (the program) → @baton/pulumi/provider loaded → the run’s modules loaded on create → credential issued; runSeconds is the run summary’s own total; medians; differences are pulumi median − cli median',
    runs,
    medians: { pulumi, pulumiSkipPreview, cli },
    pulumiBeforeMint: splitOf('pulumi'),
    pulumiSkipPreviewBeforeMint: splitOf('pulumiSkipPreview'),
    addedSecondsTarget: ADDED_SECONDS_TARGET,
    liveWindowTargetSeconds: LIVE_WINDOW_TARGET_SECONDS,
    pulumiUp: against(pulumi),
    pulumiUpSkipPreview: against(pulumiSkipPreview),
    samples,
    loadAverage: { start: loadStart.map((x) => round(x)), end: loadavg().map((x) => round(x)) },
  };
}
