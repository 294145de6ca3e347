// Benchmark: `pulumi up` of N ConfigMaps through the real engine and Kubernetes provider, against applying the same
// N objects with server-side apply through @kubernetes/client-node, in the same run on the same local cluster.
// Also records the engine's build figures (cold, warm, cached) and binary sizes. Then, in the same run, a handoff
// through `pulumi up` of stacks/local against `baton up` of the same plan (see pulumi-handoff.ts). Writes
// bench/results/pulumi.json.
//
// Usage: pnpm bench:pulumi [--runs 5] [--warm-build] [--cold-build] [--handoff-only]
//   --warm-build    rebuild the engine into a scratch cache dir with the Go build cache warm (relink only)
//   --cold-build    rebuild it with an empty Go build cache too (what a new machine pays; ~10+ minutes on 2 cores)
//   --handoff-only  only the handoff part; the file's other keys stay as they are
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type GoBuildResult, startCluster } from '@baton/testenv';
import { createPulumiEnv, ensurePulumiEngine, PULUMI_VERSIONS, type PulumiEngine } from '@baton/testenv/pulumi';
import * as k8s from '@kubernetes/client-node';
import * as pulumiK8s from '@pulumi/kubernetes';
import * as pulumi from '@pulumi/pulumi';
import { LocalWorkspace, PulumiCommand } from '@pulumi/pulumi/automation/index.js';
import { benchHandoff } from './pulumi-handoff.js';
import { median, round } from './stats.js';

const SIZES = [1, 10, 50] as const;
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    'warm-build': { type: 'boolean', default: false },
    'cold-build': { type: 'boolean', default: false },
    'handoff-only': { type: 'boolean', default: false },
  },
});
const runs = Number.parseInt(values.runs, 10);
const log = (line: string) => process.stderr.write(`${line}\n`);

async function seconds(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
}

function buildFigures(builds: readonly GoBuildResult[]) {
  return Object.fromEntries(builds.map((b) => [b.name, { buildSeconds: b.buildSeconds, peakRssMB: b.buildPeakRssMB }]));
}

/** Builds the engine into a scratch cache directory (optionally with an empty Go build cache) and reports figures. */
async function scratchBuild(coldGoCache: boolean) {
  const scratch = await mkdtemp(join(tmpdir(), 'baton-bench-build-'));
  const savedGoCache = process.env.GOCACHE;
  if (coldGoCache) process.env.GOCACHE = join(scratch, 'gocache');
  try {
    const total = await seconds(() => ensurePulumiEngine({ cacheDir: join(scratch, 'bin'), onProgress: log }));
    const again = await ensurePulumiEngine({ cacheDir: join(scratch, 'bin') });
    return { totalSeconds: round(total, 1), ...buildFigures(again.builds) };
  } finally {
    if (coldGoCache) {
      if (savedGoCache === undefined) delete process.env.GOCACHE;
      else process.env.GOCACHE = savedGoCache;
    }
    await rm(scratch, { recursive: true, force: true });
  }
}

/** `pulumi up` of N ConfigMaps and server-side apply of the same N, `runs` times per N, on one local cluster. */
async function measureConfigMaps(engine: PulumiEngine) {
  // kwok: ConfigMaps only, no Pod; the same bed as the figures already recorded.
  const cluster = await startCluster({ name: 'bench-pulumi', node: 'kwok', onProgress: log });
  const env = await createPulumiEnv({ engine });
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(cluster.kubeconfigPath);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const kubeconfig = await readFile(cluster.kubeconfigPath, 'utf8');
  const pulumiCommand = await PulumiCommand.get({ root: engine.cliRoot });

  const pulumiUp: Record<number, number[]> = {};
  const ssa: Record<number, number[]> = {};
  try {
    for (const n of SIZES) {
      pulumiUp[n] = [];
      ssa[n] = [];
      for (let r = 0; r < runs; r++) {
        const nsPulumi = `bench-pulumi-${n}-${r}`;
        const nsSsa = `bench-ssa-${n}-${r}`;
        for (const name of [nsPulumi, nsSsa]) await core.createNamespace({ body: { metadata: { name } } });

        const stack = await LocalWorkspace.createOrSelectStack(
          {
            stackName: `n${n}-r${r}`,
            projectName: 'bench',
            program: async () => {
              const provider = new pulumiK8s.Provider('cluster', { kubeconfig: pulumi.secret(kubeconfig) });
              for (let i = 0; i < n; i++) {
                new pulumiK8s.core.v1.ConfigMap(
                  `cm-${i}`,
                  { metadata: { namespace: nsPulumi, name: `cm-${i}` }, data: { index: String(i) } },
                  { provider },
                );
              }
            },
          },
          {
            workDir: env.projectDir,
            pulumiCommand,
            envVars: env.envVars,
            projectSettings: { name: 'bench', runtime: 'nodejs', backend: { url: env.backendUrl } },
          },
        );
        // The whole `pulumi up` as a user waits for it: engine start, provider start, N creates, state writes.
        const up = await seconds(async () => {
          const res = await stack.up();
          if (res.summary.resourceChanges?.create !== n + 2) throw new Error(`expected ${n + 2} creates`);
        });
        pulumiUp[n].push(up);

        // The same N objects, applied concurrently with server-side apply (what a direct client does).
        const apply = await seconds(() =>
          Promise.all(
            Array.from({ length: n }, (_, i) =>
              objects.patch(
                {
                  apiVersion: 'v1',
                  kind: 'ConfigMap',
                  metadata: { namespace: nsSsa, name: `cm-${i}` },
                  data: { index: String(i) },
                },
                undefined,
                undefined,
                'baton-bench',
                true,
                k8s.PatchStrategy.ServerSideApply,
              ),
            ),
          ),
        );
        ssa[n].push(apply);
        log(`N=${n} run ${r + 1}/${runs}: pulumi up ${up.toFixed(2)} s, server-side apply ${apply.toFixed(3)} s`);

        await stack.destroy();
        await stack.workspace.removeStack(stack.name);
        for (const name of [nsPulumi, nsSsa]) await core.deleteNamespace({ name });
      }
    }
  } finally {
    await env.cleanup();
    await cluster.stop();
  }
  return { pulumiUp, ssa };
}

/** What an earlier run measured and this one does not (`build.warm` and `build.cold` without their flags). */
interface EarlierResult {
  readonly build?: { readonly warm?: unknown; readonly cold?: unknown };
}

/**
 * The ConfigMap part and the engine's figures: every key of bench/results/pulumi.json but `handoff`. A scratch build
 * not asked for keeps the earlier run's figures: a cold build costs ~40 minutes here and the handoff changes none.
 */
async function benchConfigMaps(earlier: EarlierResult) {
  const cachedSeconds = await seconds(() => ensurePulumiEngine({ onProgress: log }));
  const engine = await ensurePulumiEngine();
  const warmBuild = values['warm-build'] ? await scratchBuild(false) : null;
  const coldBuild = values['cold-build'] ? await scratchBuild(true) : null;
  const { pulumiUp, ssa } = await measureConfigMaps(engine);
  const pulumiUpSeconds = Object.fromEntries(SIZES.map((n) => [n, round(median(pulumiUp[n]!))]));
  const ssaSeconds = Object.fromEntries(SIZES.map((n) => [n, round(median(ssa[n]!), 3)]));
  return {
    description:
      'pulumi up of N ConfigMaps (real engine + Kubernetes provider, file backend, explicit provider) vs server-side apply of the same N objects (concurrent, @kubernetes/client-node), same local cluster; medians',
    runs,
    pulumiUpSeconds,
    ssaSeconds,
    ratioPulumiToSsa: Object.fromEntries(SIZES.map((n) => [n, round(median(pulumiUp[n]!) / median(ssa[n]!), 1)])),
    samples: {
      pulumiUpSeconds: Object.fromEntries(SIZES.map((n) => [n, pulumiUp[n]!.map((x) => round(x))])),
      ssaSeconds: Object.fromEntries(SIZES.map((n) => [n, ssa[n]!.map((x) => round(x, 3))])),
    },
    build: {
      // As recorded by the build that made the cache entry on this machine (its first, cold for these packages).
      recorded: buildFigures(engine.builds),
      cachedSeconds: round(cachedSeconds),
      // Rebuilt into a scratch cache entry with the Go build cache warm (what a pin change of our wrapper costs).
      warm: warmBuild ?? earlier.build?.warm ?? null,
      // Rebuilt with an empty Go build cache (modules already downloaded): what a new machine pays, plus downloads.
      cold: coldBuild ?? earlier.build?.cold ?? null,
      note: 'figures are wall seconds on a 2-core machine shared with other builds; peak RSS is of the whole go build (the provider link alone peaks near 4 GB); warm and cold come from the last run given --warm-build / --cold-build',
    },
    binarySizes: {
      pulumi: engine.builds[0]!.sizes.pulumi,
      'pulumi-resource-kubernetes': engine.builds[1]!.sizes['pulumi-resource-kubernetes'],
    },
    versions: {
      pulumi: engine.builds[0]!.versions.pulumi,
      'pulumi-resource-kubernetes': engine.builds[1]!.versions.kubernetes,
      '@pulumi/pulumi': PULUMI_VERSIONS.pulumi,
      '@pulumi/kubernetes': PULUMI_VERSIONS.kubernetes,
      go: engine.builds[0]!.goVersion,
      node: process.version,
    },
    machine: { cpus: cpus().length },
  };
}

const out = new URL('./results/pulumi.json', import.meta.url).pathname;
const earlier = JSON.parse(await readFile(out, 'utf8').catch(() => '{}')) as Record<string, unknown> & EarlierResult;
const others = values['handoff-only'] ? earlier : await benchConfigMaps(earlier);
// From here an interrupt stops after the running handoff has revoked its credential (its bed is stopped either way).
const ac = new AbortController();
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => ac.abort(new Error(`received ${sig}`)));
const result = { ...others, handoff: await benchHandoff(runs, log, ac.signal) };
await mkdir(join(out, '..'), { recursive: true });
await writeFile(out, `${JSON.stringify(result, null, 2)}\n`);
log(`wrote ${out}`);
