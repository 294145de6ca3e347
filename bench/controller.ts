// pnpm bench:controller → bench/results/controller.json
// The controller runs as its own process, compiled as in its image (`tsc -b`, `node dist/main.js`),
// with a token file of its ServiceAccount, against a real cluster and the real Git server; RSS is
// that process's peak (VmHWM).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CLUSTER_PATH,
  callWebhook,
  configMapYaml,
  controllerManifests,
  gitSyncStatus,
  mintToken,
  NS,
  pushAsBootstrap,
  putSecret,
  startControllerEnv,
  WEBHOOK_SECRET,
  writeTokenKubeconfig,
} from '@baton/testbed';
import { median, peakRssKB } from './stats.js';

const ROOT = new URL('../', import.meta.url).pathname;
const OBJECTS = 1000;
const REPEATS = 5;
const INTERVAL_SECONDS = 5;

const round = (x: number, d = 3) => Math.round(x * 10 ** d) / 10 ** d;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string, intervalMs = 20): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    if (await check()) return (performance.now() - t0) / 1000;
    if (performance.now() - t0 > timeoutMs) throw new Error(`bench: not within ${timeoutMs} ms: ${what}`);
    await sleep(intervalMs);
  }
}

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : Number.NaN;
}

async function peakRssMB(pid: number): Promise<number> {
  return (await peakRssKB(pid)) / 1024;
}

execFileSync('pnpm', ['exec', 'tsc', '-b', 'packages/controller'], { cwd: ROOT, stdio: 'inherit' });
const env = await startControllerEnv();
const tmp = await mkdtemp(join(tmpdir(), 'baton-bench-'));
let child: ChildProcess | undefined;
try {
  const repoUrl = env.git.repoUrl(env.repo);
  const controllerFiles = await controllerManifests(repoUrl, INTERVAL_SECONDS);
  const base = await env.git.commitFiles(env.repo, controllerFiles, 'controller');
  await pushAsBootstrap(env.admin, controllerFiles);
  await putSecret(env.admin, NS, 'baton-pull-credential', {
    username: env.git.credentials.username,
    password: env.git.credentials.password,
  });
  await putSecret(env.admin, NS, 'baton-webhook', { secret: WEBHOOK_SECRET });
  const token = await mintToken(env.admin, NS, 'baton-controller');
  const kubeconfig = await writeTokenKubeconfig(tmp, env.cluster, token);
  await mkdir(join(tmp, 'work'));

  const launch = async (identity: string) => {
    const p = spawn(
      process.execPath,
      [
        'packages/controller/dist/main.js',
        '--kubeconfig',
        kubeconfig,
        '--port',
        '0',
        '--identity',
        identity,
        '--work-dir',
        join(tmp, identity),
      ],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'inherit'],
        detached: true,
      },
    );
    let out = '';
    p.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.length > 200_000) out = out.slice(-50_000);
    });
    await until(async () => /"url":"http:\/\/[^"]+"/.test(out), 30_000, 'controller URL');
    return { p, url: /"url":"(http:\/\/[^"]+)"/.exec(out)?.[1] ?? '' };
  };

  let { p, url } = await launch('bench-1');
  child = p;
  await until(
    async () => (await gitSyncStatus(env.admin))?.lastAppliedRevision === base,
    60_000,
    'controller manifests applied',
  );

  // First sync of 1,000 ConfigMaps in 10 multi-document files.
  const files: Record<string, string> = {
    [`${CLUSTER_PATH}/bench/namespace.yaml`]: 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: bench\n',
  };
  for (let f = 0; f < 10; f++) {
    const docs: string[] = [];
    for (let i = 0; i < OBJECTS / 10; i++)
      docs.push(
        configMapYaml('bench', `cm-${f}-${i}`, { index: String(i), file: String(f), payload: 'x'.repeat(200) }),
      );
    files[`${CLUSTER_PATH}/bench/cm-${f}.yaml`] = docs.join('---\n');
  }
  const big = await env.git.commitFiles(env.repo, files, '1000 objects');
  const syncsBefore = await metric(url, 'baton_controller_syncs_total{result="success"}');
  await callWebhook(url);
  await until(
    async () => (await gitSyncStatus(env.admin))?.lastAppliedRevision === big,
    180_000,
    '1000 objects applied',
    100,
  );
  await until(
    async () => (await metric(url, 'baton_controller_syncs_total{result="success"}')) > syncsBefore,
    10_000,
    'sync counted',
  );
  const firstSync1000Seconds = await metric(url, 'baton_controller_last_sync_duration_seconds');

  const listRvs = async () => {
    const l = await env.admin.call<{ items: { metadata: { name: string; resourceVersion: string } }[] }>(
      'GET',
      '/api/v1/namespaces/bench/configmaps',
    );
    return new Map(l.items.map((i) => [i.metadata.name, i.metadata.resourceVersion]));
  };
  const rvsBefore = await listRvs();

  // No-op syncs: same revision, nothing changed in the cluster.
  const noop: number[] = [];
  for (let i = 0; i < REPEATS; i++) {
    const n = await metric(url, 'baton_controller_syncs_total{result="success"}');
    await callWebhook(url);
    await until(
      async () => (await metric(url, 'baton_controller_syncs_total{result="success"}')) > n,
      30_000,
      'no-op sync',
    );
    noop.push(await metric(url, 'baton_controller_last_sync_duration_seconds'));
  }
  const rvsAfterNoop = await listRvs();
  const noopRewrites = [...rvsBefore].filter(([k, v]) => rvsAfterNoop.get(k) !== v).length;

  // Webhook latency: commit one change, call the webhook, wait for lastAppliedRevision.
  const webhook: number[] = [];
  for (let i = 0; i < REPEATS; i++) {
    const sha = await env.git.commitFiles(
      env.repo,
      { [`${CLUSTER_PATH}/bench/probe.yaml`]: configMapYaml('bench', 'probe', { n: `w${i}` }) },
      `webhook ${i}`,
    );
    const t0 = performance.now();
    await callWebhook(url);
    await until(
      async () => (await gitSyncStatus(env.admin))?.lastAppliedRevision === sha,
      30_000,
      'webhook commit applied',
    );
    webhook.push((performance.now() - t0) / 1000);
  }

  // Poll latency: commit, no webhook; expected around interval/2 plus one sync.
  const poll: number[] = [];
  for (let i = 0; i < 3; i++) {
    const sha = await env.git.commitFiles(
      env.repo,
      { [`${CLUSTER_PATH}/bench/probe.yaml`]: configMapYaml('bench', 'probe', { n: `p${i}` }) },
      `poll ${i}`,
    );
    const t0 = performance.now();
    await until(
      async () => (await gitSyncStatus(env.admin))?.lastAppliedRevision === sha,
      (INTERVAL_SECONDS + 30) * 1000,
      'polled commit applied',
      50,
    );
    poll.push((performance.now() - t0) / 1000);
  }
  const rss1 = await peakRssMB(p.pid!);

  // A restarted controller has no cache: its first sync re-applies everything, which SSA turns
  // into no-ops (the resourceVersions must not move).
  const rvsBeforeRestart = await listRvs();
  process.kill(p.pid!, 'SIGTERM');
  await new Promise((r) => p.once('exit', r));
  ({ p, url } = await launch('bench-2'));
  child = p;
  await until(
    async () => (await metric(url, 'baton_controller_syncs_total{result="success"}')) >= 1,
    180_000,
    'first sync after restart',
    100,
  );
  const noopAfterRestartSeconds = await metric(url, 'baton_controller_last_sync_duration_seconds');
  const rvsAfterRestart = await listRvs();
  const restartRewrites = [...rvsBeforeRestart].filter(([k, v]) => rvsAfterRestart.get(k) !== v).length;
  const rss2 = await peakRssMB(p.pid!);
  process.kill(p.pid!, 'SIGTERM');
  await new Promise((r) => p.once('exit', r));
  child = undefined;

  const result = {
    webhookLatencySeconds: round(median(webhook)),
    pollLatencySeconds: round(median(poll)),
    firstSync1000Seconds: round(firstSync1000Seconds),
    noopSync1000Seconds: round(median(noop)),
    peakRssMB: round(Math.max(rss1, rss2), 1),
    noopSync1000ObjectsRewritten: noopRewrites,
    noopSync1000AfterRestartSeconds: round(noopAfterRestartSeconds),
    noopSync1000AfterRestartObjectsRewritten: restartRewrites,
    samples: {
      webhookLatencySeconds: webhook.map((x) => round(x)),
      pollLatencySeconds: poll.map((x) => round(x)),
      noopSync1000Seconds: noop.map((x) => round(x)),
    },
    targets: { webhookLatencySeconds: 2, noopSync1000Seconds: 5, peakRssMB: 200 },
    setup: {
      objects: OBJECTS,
      intervalSeconds: INTERVAL_SECONDS,
      repeats: REPEATS,
      controller: 'node packages/controller/dist/main.js (tsc -b), own process, ServiceAccount token file',
      cluster: 'testenv: kube-apiserver v1.36.3 + etcd on loopback, 1 kwok node',
      cpus: cpus().length,
      node: process.version,
      measuredAt: new Date().toISOString(),
    },
  };
  await mkdir(join(ROOT, 'bench/results'), { recursive: true });
  await writeFile(join(ROOT, 'bench/results/controller.json'), `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  const failed =
    result.webhookLatencySeconds > 2 ||
    result.noopSync1000Seconds > 5 ||
    result.peakRssMB > 200 ||
    noopRewrites > 0 ||
    restartRewrites > 0;
  if (failed) process.exitCode = 1;
} finally {
  if (child?.pid && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
  await env.stop();
  await rm(tmp, { recursive: true, force: true });
}
