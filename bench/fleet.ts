// `pnpm bench:fleet [--runs N] [--only real|simulated]`: what a fleet run costs.
// 1. Real: 8 real local clusters handed off by `baton fleet up`'s local engine, concurrency 1 versus 4, in one run
//    (one wave, so the comparison is the concurrency alone; clusters are reset between runs). Target: >= 3x.
//    Also the memory of the 8 clusters (sum of every component's RSS) and of the orchestrator.
// 2. Simulated: a 1,000-cluster schedule (canary, 10%, rest; concurrency 50; budget 5%; a few failures and retries)
//    against a simulated handoff on a fake clock, in a child process of its own: the orchestrator's own cost per
//    cluster and its peak RSS. Labelled simulated in the output and the JSON. Targets: <= 5 ms, <= 300 MB.
// Writes bench/results/fleet.json with medians.
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { createHandoffDeps, type HandoffSummary, silentLogger, systemClock } from '@baton/core';
import { createFakeClock } from '@baton/core/testing';
import {
  type AttemptResult,
  type FleetTarget,
  localHandoff,
  openFleetAudit,
  parseFleetText,
  renderTargets,
  runFleet,
  type Wave,
} from '@baton/fleet';
import { createFleetView } from '@baton/fleet/progress';
import { clientsFromKubeconfigFile } from '@baton/kube';
import {
  deleteNamespacesAndWait,
  startRealFleetTargets,
  stopRealFleetTargets,
  targetOverrides,
  writeFleetFile,
} from '@baton/testbed';
import { median, peakRssKB } from './stats.js';

const args = process.argv.slice(2);
const resultPath = new URL('./results/fleet.json', import.meta.url).pathname;
const log = (s: string) => process.stderr.write(`${s}\n`);
const r2 = (n: number) => Math.round(n * 100) / 100;

if (args[0] === '--simulated-child') {
  process.stdout.write(`${JSON.stringify(await simulatedSchedule(Number(args[1])))}\n`);
  process.exit(0);
}

const runs = Number(args[args.indexOf('--runs') + 1]) || 3;
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;

/** One 1,000-cluster schedule against a simulated handoff; returns the orchestrator's cost. */
async function simulatedSchedule(n: number) {
  const clock = createFakeClock();
  const names = Array.from({ length: n }, (_, i) => `edge-${String(i).padStart(4, '0')}`);
  const targets = names.map((name) => ({ name }));
  const waves: Wave<{ name: string }>[] = [
    { index: 0, name: 'canary', clusters: targets.slice(0, 1) },
    { index: 1, name: 'ten-percent', clusters: targets.slice(1, 101) },
    { index: 2, name: 'rest', clusters: targets.slice(101) },
  ];
  // The live view's plain mode as a user would see it in CI, written nowhere.
  const sink = { isTTY: false, write: () => true } as unknown as NodeJS.WriteStream;
  const view = createFleetView({ out: sink, waves, budget: Math.floor(n * 0.05), steps: false });
  const steps = [
    'validate',
    'preflight',
    'cleanup',
    'mint',
    'scope-check',
    'push',
    'takeover',
    'revoke',
    'prove',
    'record',
  ];
  const failOnce = new Set(names.filter((_, i) => i % 97 === 5));
  const seen = new Set<string>();
  const rssBeforeMB = process.memoryUsage.rss() / 1024 / 1024;
  const t0 = performance.now();
  const result = await runFleet<{ name: string }, unknown>({
    waves,
    concurrency: 50,
    budget: Math.floor(n * 0.05),
    retries: 1,
    retryDelayMs: 1000,
    clock,
    onEvent: view.onEvent,
    handoff: async (t): Promise<AttemptResult> => {
      for (const s of steps) {
        view.onStep(t.name, s);
        await clock.sleep(1_500);
      }
      if (failOnce.has(t.name) && !seen.has(t.name)) {
        seen.add(t.name);
        return { outcome: 'failed', failedStep: 'takeover', error: 'simulated takeover timeout' };
      }
      return { outcome: 'handed-off', summary: { runId: `run-${t.name}`, audit: { index: 0 } } };
    },
  });
  const wallMs = performance.now() - t0;
  return {
    clusters: n,
    outcome: result.outcome,
    wallMs: r2(wallMs),
    perClusterMs: r2(wallMs / n),
    peakRssMB: r2((await peakRssKB(process.pid)) / 1024),
    rssBeforeScheduleMB: r2(rssBeforeMB),
    simulatedSeconds: r2(clock.monotonicMs() / 1000),
  };
}

async function simulated() {
  const samples = [];
  for (let i = 0; i < Math.max(runs, 5); i++) {
    const child = spawn(
      process.execPath,
      ['--conditions=@baton/source', '--import', 'tsx', fileURLToPath(import.meta.url), '--simulated-child', '1000'],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    await new Promise((r) => child.on('exit', r));
    const s = JSON.parse(out) as Awaited<ReturnType<typeof simulatedSchedule>>;
    log(`simulated 1,000-cluster schedule ${i + 1}: ${JSON.stringify(s)}`);
    samples.push(s);
  }
  const perClusterMs = r2(median(samples.map((s) => s.perClusterMs)));
  const peakRssMB = r2(median(samples.map((s) => s.peakRssMB)));
  return {
    label: 'SIMULATED handoff (fake clock; the real orchestrator, retries and plain live view)',
    clusters: 1000,
    schedule: 'waves: canary 1, 100, rest 899; concurrency 50; budget 5% (50); retries 1; ~1% fail once',
    perClusterMs,
    peakRssMB,
    wallMs: r2(median(samples.map((s) => s.wallMs))),
    rssBeforeScheduleMB: r2(median(samples.map((s) => s.rssBeforeScheduleMB))),
    notes:
      'peakRssMB is the whole process (Node, tsx and the loaded packages); rssBeforeScheduleMB is its RSS with everything loaded, just before the schedule starts',
    targets: { perClusterAtMost5ms: perClusterMs <= 5, peakRssAtMost300MB: peakRssMB <= 300 },
    samples,
  };
}

async function real() {
  const beds = await startRealFleetTargets(8, `bench-fleet-${process.pid}`);
  const clusters = beds.map((b) => b.cluster);
  const env = beds[0]!.side;
  try {
    const path = writeFleetFile(`${env.dir}/bench.yaml`, {
      template: env.planPath,
      clusters,
      waves: [{}],
      concurrency: 1,
      failureBudget: 0,
      overrides: Object.fromEntries(beds.map((b) => [b.cluster.name, targetOverrides(b.side)])),
    });
    const fleet = parseFleetText(await readFile(path, 'utf8'), path);
    const targets = renderTargets(fleet);
    const waves: Wave<FleetTarget>[] = [{ index: 0, name: 'all', clusters: targets }];
    const byConcurrency: Record<string, number[]> = { 1: [], 4: [] };
    let first = true;
    let clustersRssMB = 0;
    let orchestratorPeakMB = 0;
    for (let i = 0; i < runs; i++) {
      for (const concurrency of [1, 4]) {
        if (!first) for (const c of clusters) await deleteNamespacesAndWait(c.kubeconfigPath, ['baton-system']);
        first = false;
        const audit = await openFleetAudit({
          ...targets[0]!.loaded.plan.audit,
          fleetRunId: `bench-${i}-${concurrency}`,
        });
        const t0 = performance.now();
        const r = await runFleet<FleetTarget, HandoffSummary>({
          waves,
          concurrency,
          budget: 0,
          retries: 0,
          clock: systemClock,
          handoff: localHandoff({
            depsFor: async (t) =>
              createHandoffDeps(t.loaded, clientsFromKubeconfigFile(t.loaded.plan.cluster.kubeconfig!), {
                via: 'fleet',
                overrides: { log: silentLogger(), audit: audit.sink },
              }),
          }),
        });
        const seconds = (performance.now() - t0) / 1000;
        await audit.close();
        if (r.outcome !== 'succeeded')
          throw new Error(`bench run ${i} concurrency ${concurrency}: ${JSON.stringify(r.waves)}`);
        byConcurrency[concurrency]!.push(seconds);
        log(`8 clusters, concurrency ${concurrency}, run ${i + 1}/${runs}: ${r2(seconds)} s`);
        clustersRssMB = Math.max(clustersRssMB, await rssOfClusters(clusters.flatMap((c) => Object.values(c.pids))));
        orchestratorPeakMB = (await peakRssKB(process.pid)) / 1024;
      }
    }
    const c1 = median(byConcurrency[1]!);
    const c4 = median(byConcurrency[4]!);
    return {
      clusters: 8,
      runs,
      concurrency1Seconds: r2(c1),
      concurrency4Seconds: r2(c4),
      speedup: r2(c1 / c4),
      clustersRssMB: r2(clustersRssMB),
      orchestratorPeakRssMB: r2(orchestratorPeakMB),
      targets: { speedupAtLeast3x: c1 / c4 >= 3 },
      samples: byConcurrency,
      notes:
        "one wave of 8 (no canary), so the ratio is the concurrency alone; each cluster has a real node where baton-controller takes over from its own bed's Git server; clustersRssMB sums VmRSS of every component of the 8 clusters (control plane, registry, containerd, kubelet, kube-proxy, CoreDNS) after a run",
    };
  } finally {
    await stopRealFleetTargets(beds);
  }
}

async function rssOfClusters(pids: readonly number[]): Promise<number> {
  let kb = 0;
  for (const pid of pids) {
    const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    kb += Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
  }
  return kb / 1024;
}

const previous = JSON.parse(await readFile(resultPath, 'utf8').catch(() => '{}')) as Record<string, unknown>;
const result = {
  measuredAt: new Date().toISOString(),
  loadAverage: (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' '),
  real: only === 'simulated' ? previous.real : await real(),
  simulated: only === 'real' ? previous.simulated : await simulated(),
};
await writeFile(resultPath, `${JSON.stringify(result, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
