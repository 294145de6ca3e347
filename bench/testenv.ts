// `pnpm bench:testenv [--cold | --only-cold] [--runs N]`: build and start-up cost of the real local control plane.
// Writes bench/results/testenv.json. `--cold` also rebuilds every binary from nothing (fresh GOCACHE and
// module cache in a temp dir), as CI on a new machine does; without it the last cold figure is carried over.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clientsFromKubeconfigFile } from '@baton/kube';
import {
  type Cluster,
  CONTROL_PLANE_VERSIONS,
  ensureControlPlaneBinaries,
  goVersion,
  pollUntil,
  startCluster,
} from '@baton/testenv';
import { median, peakRssKB } from './stats.js';

const args = process.argv.slice(2);
const onlyCold = args.includes('--only-cold');
const cold = onlyCold || args.includes('--cold');
const runs = Number(args[args.indexOf('--runs') + 1]) || 5;
const resultPath = new URL('./results/testenv.json', import.meta.url).pathname;
const log = (s: string) => process.stderr.write(`${s}\n`);
const r2 = (n: number) => Math.round(n * 100) / 100;

const previous = JSON.parse(await readFile(resultPath, 'utf8').catch(() => '{}')) as Record<string, unknown>;

let coldBuild: Record<string, unknown> | undefined;
if (cold) {
  const tmp = await mkdtemp(join(tmpdir(), 'baton-cold-'));
  process.env.GOCACHE = join(tmp, 'gocache');
  process.env.GOMODCACHE = join(tmp, 'gomod');
  process.env.GOFLAGS = '-modcacherw';
  log(`cold build into ${tmp} (fresh GOCACHE and module cache)`);
  const t0 = performance.now();
  const bins = await ensureControlPlaneBinaries({ cacheDir: join(tmp, 'bin'), onProgress: log });
  coldBuild = {
    coldBuildSeconds: r2((performance.now() - t0) / 1000),
    coldBuildPeakRssMB: Math.max(...bins.builds.map((b) => b.buildPeakRssMB ?? 0)),
    coldBuildCpuSeconds: r2(bins.builds.reduce((a, b) => a + (b.buildCpuSeconds ?? 0), 0)),
    perModuleSeconds: Object.fromEntries(bins.builds.map((b) => [b.name, b.buildSeconds])),
    perModuleCpuSeconds: Object.fromEntries(bins.builds.map((b) => [b.name, b.buildCpuSeconds])),
    measuredAt: new Date().toISOString(),
  };
  delete process.env.GOCACHE;
  delete process.env.GOMODCACHE;
  delete process.env.GOFLAGS;
  await rm(tmp, { recursive: true, force: true });
}

if (onlyCold) {
  await writeFile(
    resultPath,
    `${JSON.stringify({ ...previous, coldBuildSeconds: coldBuild?.coldBuildSeconds, coldBuild }, null, 2)}\n`,
  );
  log(JSON.stringify(coldBuild, null, 2));
  process.exit(0);
}

const tw = performance.now();
const bins = await ensureControlPlaneBinaries({ onProgress: log });
const warmBuildSeconds = r2((performance.now() - tw) / 1000);
const sizesMB: Record<string, number> = {};
for (const b of bins.builds) for (const [k, v] of Object.entries(b.sizes)) sizesMB[k] = Math.round(v / 1e5) / 10;

const startSeconds: number[] = [];
const availableSeconds: number[] = [];
const rssMB: number[] = [];
let rssBreakdownMB: Record<string, number> = {};
for (let i = 0; i < runs; i++) {
  const t0 = performance.now();
  const c: Cluster = await startCluster({ node: 'kwok', nodes: 2, binaries: bins });
  startSeconds.push((performance.now() - t0) / 1000);
  try {
    const admin = clientsFromKubeconfigFile(c.kubeconfigPath);
    const t1 = performance.now();
    await admin.apps.createNamespacedDeployment({
      namespace: 'default',
      body: {
        metadata: { name: 'bench' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'bench' } },
          template: {
            metadata: { labels: { app: 'bench' } },
            spec: { containers: [{ name: 'c', image: 'registry.invalid/bench:1' }] },
          },
        },
      },
    });
    await pollUntil(
      async () => {
        const d = await admin.apps.readNamespacedDeployment({ namespace: 'default', name: 'bench' });
        const available =
          d.status?.conditions?.some((x) => x.type === 'Available' && x.status === 'True') === true &&
          d.status?.availableReplicas === 2;
        return available || undefined;
      },
      { timeoutMs: 60_000, intervalMs: 50, what: 'the bench Deployment to be Available' },
    );
    availableSeconds.push((performance.now() - t1) / 1000);
    const breakdown: Record<string, number> = {};
    for (const [name, pid] of Object.entries(c.pids)) breakdown[name] = Math.round((await peakRssKB(pid)) / 1024);
    rssMB.push(Object.values(breakdown).reduce((a, b) => a + b, 0));
    rssBreakdownMB = breakdown;
  } finally {
    await c.stop();
  }
  log(
    `run ${i + 1}/${runs}: start ${startSeconds.at(-1)!.toFixed(2)} s, Available ${availableSeconds.at(-1)!.toFixed(2)} s, RSS ${rssMB.at(-1)} MB`,
  );
}

// The same bed with a real node (kubelet, containerd, kube-proxy, CoreDNS in its own network namespace), against the
// kwok bed above as the baseline: bed start to node Ready, Pod create to Ready with the image cached, node memory.
const realStartSeconds: number[] = [];
const realNodeReadySeconds: number[] = [];
const realPodReadySeconds: number[] = [];
const realNodeRssMB: number[] = [];
let realNodeRssBreakdownMB: Record<string, number> = {};
for (let i = 0; i < runs; i++) {
  const t0 = performance.now();
  const c: Cluster = await startCluster({ node: 'real', binaries: bins });
  realStartSeconds.push((performance.now() - t0) / 1000);
  try {
    const node = c.realNode!;
    realNodeReadySeconds.push(node.readySeconds);
    const operator = clientsFromKubeconfigFile(c.kubeconfigPath);
    const image = `${node.registryHost}/baton-testenv/pause:bed`;
    const podReady = async (name: string) => {
      const t1 = performance.now();
      await operator.core.createNamespacedPod({
        namespace: 'default',
        body: { metadata: { name }, spec: { containers: [{ name: 'c', image }] } },
      });
      for (;;) {
        const p = await operator.core.readNamespacedPod({ namespace: 'default', name });
        if (p.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True')) break;
        if (performance.now() - t1 > 60_000) throw new Error(`Pod ${name} not Ready in 60 s`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return (performance.now() - t1) / 1000;
    };
    await podReady('first'); // pulls the image
    realPodReadySeconds.push(await podReady('cached'));
    const breakdown: Record<string, number> = {};
    for (const name of ['containerd', 'kubelet', 'kube-proxy', 'coredns', 'registry'])
      breakdown[name] = Math.round((await peakRssKB(c.pids[name]!)) / 1024);
    realNodeRssMB.push(Object.values(breakdown).reduce((a, b) => a + b, 0));
    realNodeRssBreakdownMB = breakdown;
  } finally {
    await c.stop();
  }
  log(
    `real node run ${i + 1}/${runs}: start ${realStartSeconds.at(-1)!.toFixed(2)} s, node Ready ${realNodeReadySeconds.at(-1)} s after kubelet, cached Pod Ready ${realPodReadySeconds.at(-1)!.toFixed(2)} s, node RSS ${realNodeRssMB.at(-1)} MB`,
  );
}

// Eight clusters at once, as the fleet tests will need: start time and memory of the whole set.
const t8 = performance.now();
const eight = await Promise.all(
  Array.from({ length: 8 }, () => startCluster({ node: 'kwok', nodes: 1, binaries: bins, startTimeoutMs: 300_000 })),
);
const eightStartSeconds = r2((performance.now() - t8) / 1000);
let eightRssKB = 0;
for (const c of eight) for (const pid of Object.values(c.pids)) eightRssKB += await peakRssKB(pid);
await Promise.all(eight.map((c) => c.stop()));

const result = {
  benchmark: 'testenv',
  measuredAt: new Date().toISOString(),
  machine: {
    cores: (await import('node:os')).cpus().length,
    memoryGB: Math.round((await import('node:os')).totalmem() / 2 ** 30),
  },
  versions: { ...CONTROL_PLANE_VERSIONS, go: await goVersion(), node: process.version },
  coldBuildSeconds: coldBuild?.coldBuildSeconds ?? (previous.coldBuildSeconds as number | undefined) ?? null,
  coldBuild: coldBuild ?? previous.coldBuild ?? null,
  warmBuildSeconds,
  binarySizesMB: sizesMB,
  runs,
  warmStartSeconds: r2(median(startSeconds)),
  warmStartSecondsAll: startSeconds.map(r2),
  deploymentAvailableSeconds: r2(median(availableSeconds)),
  deploymentAvailableSecondsAll: availableSeconds.map(r2),
  rssPerClusterMB: median(rssMB),
  rssBreakdownMB,
  eightClusters: {
    startSeconds: eightStartSeconds,
    totalPeakRssMB: Math.round(eightRssKB / 1024),
    perClusterMB: Math.round(eightRssKB / 1024 / 8),
  },
  realNode: {
    baseline: 'the kwok bed above, same run (warmStartSeconds)',
    startSeconds: r2(median(realStartSeconds)),
    startSecondsAll: realStartSeconds.map(r2),
    overKwokSeconds: r2(median(realStartSeconds) - median(startSeconds)),
    nodeReadyAfterKubeletSeconds: r2(median(realNodeReadySeconds)),
    cachedPodReadySeconds: r2(median(realPodReadySeconds)),
    cachedPodReadySecondsAll: realPodReadySeconds.map(r2),
    nodePartsPeakRssMB: median(realNodeRssMB),
    nodePartsRssBreakdownMB: realNodeRssBreakdownMB,
    targets: { overKwokSeconds: 5, cachedPodReadySeconds: 2, nodePartsPeakRssMB: 300 },
  },
  targets: { warmStartSeconds: 15, rssPerClusterMB: 700 },
  meetsTargets:
    median(startSeconds) <= 15 &&
    median(rssMB) <= 700 &&
    median(realStartSeconds) - median(startSeconds) <= 5 &&
    median(realPodReadySeconds) <= 2 &&
    median(realNodeRssMB) <= 300,
};
await mkdir(new URL('./results/', import.meta.url), { recursive: true });
await writeFile(resultPath, `${JSON.stringify(result, null, 2)}\n`);
log(JSON.stringify(result, null, 2));
