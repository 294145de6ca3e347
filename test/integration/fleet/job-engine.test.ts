import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type HandoffRecord, loadTrustedKeys, readEntries, verifyLog } from '@baton/audit';
import { buildWaveJob, journalName, parseIndexes } from '@baton/fleet';
import { clientsFromKubeconfigFile, type KubeClients } from '@baton/kube';
import { type Cluster, POD_RUNNER_JOB_LABEL, type PodRunner, startCluster, startPodRunner } from '@baton/testenv';
import { BatchV1Api, type V1Job } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Controllers, fleetUp, resetCluster, startClusters, writeFleetFile } from '../../support/fleet-env.js';
import { createHandoffEnv, type HandoffEnv } from '../../support/handoff-env.js';
import { eventually } from '../../support/kube.js';

// The Job engine against a real management cluster: its kube-controller-manager runs the real Job controller, the
// pod runner (Job mode) runs each shard pod as a local process and reports its real exit code, and 3 real targets.

const CASE_MS = 1_200_000;
const NS = 'baton-fleet';
const SA = 'baton-fleet-shard';
const IMAGE = 'ghcr.io/baton-dev/baton:fleet-test';
const TSX = ['--conditions=@baton/source', '--import', 'tsx'];
const HELD_SHARD = fileURLToPath(new URL('../../support/held-shard.ts', import.meta.url));
const NOOP_SHARD = fileURLToPath(new URL('../../support/noop-shard.mjs', import.meta.url));

let management: Cluster;
let targets: Cluster[] = [];
let env: HandoffEnv;
let controllers: Controllers;
let mgmt: KubeClients;
let batch: BatchV1Api;
let shards: PodRunner;
let holdFile: string;

async function setUpManagement(k: KubeClients) {
  await k.core.createNamespace({ body: { metadata: { name: NS } } });
  await k.core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: SA } } });
  await k.rbac.createNamespacedRole({
    namespace: NS,
    body: {
      metadata: { name: SA },
      rules: [
        { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'create', 'update'] },
        { apiGroups: [''], resources: ['secrets'], verbs: ['get'] },
      ],
    },
  });
  await k.rbac.createNamespacedRoleBinding({
    namespace: NS,
    body: {
      metadata: { name: SA },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: SA },
      subjects: [{ kind: 'ServiceAccount', name: SA, namespace: NS }],
    },
  });
}

function fleetFile(
  name: string,
  clusters: readonly Cluster[],
  o: { budget: number; retries: number; overrides?: Record<string, Record<string, unknown>> },
) {
  const path = writeFleetFile(join(env.dir, `${name}.yaml`), {
    template: env.planPath,
    clusters: [],
    waves: [{ count: 1 }, {}],
    concurrency: 2,
    failureBudget: o.budget,
    retries: o.retries,
    extra: {
      clusters: clusters.map((c) => ({
        name: c.name,
        secretRef: { name: `${c.name}-kubeconfig`, namespace: NS },
        ...(o.overrides?.[c.name] ? { overrides: o.overrides[c.name] } : {}),
      })),
      job: { image: IMAGE, namespace: NS, serviceAccountName: SA, podLabels: { [POD_RUNNER_JOB_LABEL]: 'job' } },
    },
  });
  return path;
}

const jobsOf = async (fleetRunId: string) =>
  (await batch.listNamespacedJob({ namespace: NS, labelSelector: `baton.dev/fleet-run=${fleetRunId}` })).items;

beforeAll(async () => {
  management = await startCluster({ name: `fleet-mgmt-${process.pid}`, nodes: 1 });
  targets = await startClusters(3, `fleet-target-${process.pid}`);
  mgmt = clientsFromKubeconfigFile(management.kubeconfigPath);
  batch = mgmt.kc.makeApiClient(BatchV1Api);
  await setUpManagement(mgmt);
  for (const t of targets)
    await mgmt.core.createNamespacedSecret({
      namespace: NS,
      body: {
        metadata: { name: `${t.name}-kubeconfig` },
        stringData: { value: readFileSync(t.kubeconfigPath, 'utf8') },
      },
    });
  env = await createHandoffEnv({
    kubeconfigPath: targets[0]!.kubeconfigPath,
    plan: { takeover: { timeoutSeconds: 300 }, push: { budgetSeconds: 300 } },
  });
  controllers = new Controllers(env, targets);
  for (const t of targets) controllers.start(t.name);
  holdFile = join(env.dir, 'hold.json');
  shards = await startPodRunner({
    kubeconfigPath: management.kubeconfigPath,
    imagePrefix: IMAGE,
    mode: 'job',
    command: [process.execPath, ...TSX, HELD_SHARD, holdFile],
  });
});

afterAll(async () => {
  await shards?.stop();
  await controllers?.stopAll();
  await env?.stop();
  await Promise.all([management, ...targets].filter(Boolean).map((c) => c.stop()));
});

describe('baton fleet up --engine job', () => {
  it(
    'hands off every target through Indexed Jobs; a shard killed at push is retried and resumes',
    async () => {
      const killed = targets[2]!;
      const marker = join(env.dir, 'held.pid');
      writeFileSync(holdFile, JSON.stringify({ cluster: killed.name, step: 'push', marker }));
      const run = fleetUp([
        '-f',
        fleetFile('job', targets, { budget: 0, retries: 1 }),
        '--engine',
        'job',
        '--management-kubeconfig',
        management.kubeconfigPath,
      ]);
      await eventually(
        async () => existsSync(marker) && readFileSync(marker, 'utf8') !== '',
        300_000,
        'a shard held at push',
        200,
      );
      process.kill(Number(readFileSync(marker, 'utf8')), 'SIGKILL');
      const r = await run;
      expect(r.code, r.stderr.slice(-3000)).toBe(0);
      expect(r.result.waves.map((w) => w.clusters.map((c) => [c.name, c.status]))).toEqual([
        [[targets[0]!.name, 'handed-off']],
        targets.slice(1).map((t) => [t.name, 'handed-off']),
      ]);
      expect(r.result.waves[1]!.clusters.find((c) => c.name === killed.name)!.attempts).toBe(2);

      // The Jobs: one per wave, Indexed, parallelism = concurrency, backoffLimitPerIndex = retries, maxFailedIndexes = budget.
      const jobs = await jobsOf(r.result.fleetRunId);
      expect(jobs.map((j) => j.spec?.completions).sort()).toEqual([1, 2]);
      for (const j of jobs) {
        expect(j.spec).toMatchObject({ completionMode: 'Indexed', backoffLimitPerIndex: 1, maxFailedIndexes: 0 });
        expect(j.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True')).toBe(true);
      }
      // The killed pod's real exit code (SIGKILL: 137) reached the Job controller through the pod status.
      const pods = await mgmt.core.listNamespacedPod({
        namespace: NS,
        labelSelector: `baton.dev/fleet-run=${r.result.fleetRunId}`,
      });
      const codes = pods.items.map((p) => p.status?.containerStatuses?.[0]?.state?.terminated?.exitCode);
      expect(codes.filter((c) => c === 137)).toHaveLength(1);

      // The replacement resumed from the journal on the management cluster: the killed run is recorded (aborted, with its
      // credential), then the new one handed off; all through the orchestrator into one log that verifies.
      const records: HandoffRecord[] = [];
      for await (const e of readEntries(env.auditLogPath)) records.push(e.statement.predicate);
      const mine = records.filter((x) => x.cluster.name === killed.name);
      expect(mine.map((x) => [x.outcome, x.failedStep])).toEqual([
        ['aborted', 'push'],
        ['handed-off', undefined],
      ]);
      expect(mine[0]!.credential?.fingerprint).not.toBe(mine[1]!.credential?.fingerprint);
      const cm = await mgmt.core.readNamespacedConfigMap({ namespace: NS, name: journalName(killed.name) });
      expect(cm.data?.journal).toContain('"step":"push"');
      const v = await verifyLog(env.auditLogPath, await loadTrustedKeys(env.keysPath));
      expect(v.failures).toEqual([]);
    },
    CASE_MS,
  );

  it(
    'a failing canary with a budget of 0 fails its Job, and the next wave’s Job is never created (exit 1)',
    async () => {
      const [canary, next] = [targets[0]!, targets[1]!];
      await resetCluster(canary.kubeconfigPath, ['gitops-system', 'baton-system']);
      await controllers.stop(canary.name);
      const r = await fleetUp([
        '-f',
        fleetFile('job-halt', [canary, next], {
          budget: 0,
          retries: 0,
          overrides: { [canary.name]: { takeover: { timeoutSeconds: 10 } } },
        }),
        '--engine',
        'job',
        '--management-kubeconfig',
        management.kubeconfigPath,
      ]);
      expect(r.code, r.stderr.slice(-3000)).toBe(1);
      expect(r.result.outcome).toBe('halted');
      expect(r.result.notStarted).toEqual([next.name]);
      const jobs = await jobsOf(r.result.fleetRunId);
      expect(jobs).toHaveLength(1);
      expect(jobs[0]!.status?.conditions?.find((c) => c.type === 'Failed')?.reason).toBe('MaxFailedIndexesExceeded');
    },
    CASE_MS,
  );

  it(
    'a no-op shard over 1,000 indexes: the real Job controller honours parallelism and maxFailedIndexes',
    async () => {
      const log = join(env.dir, 'noop.log');
      writeFileSync(log, '');
      const noop = await startPodRunner({
        kubeconfigPath: management.kubeconfigPath,
        imagePrefix: 'example.invalid/noop',
        mode: 'job',
        command: [process.execPath, NOOP_SHARD, log, [3, 5, 7, 11, 13, 17].map((i) => i + 100).join(',')],
        pollMs: 200,
      });
      const job = (name: string, budgetLeft: number): V1Job => ({
        ...buildWaveJob({
          name,
          namespace: NS,
          fleetRunId: name,
          wave: 0,
          completions: 1000,
          parallelism: 25,
          retries: 0,
          budgetLeft,
          image: 'example.invalid/noop:1',
          serviceAccountName: SA,
          args: [],
          podLabels: { [POD_RUNNER_JOB_LABEL]: 'job' },
        }),
      });
      const finished = (name: string) =>
        eventually(
          async () => {
            const j = await batch.readNamespacedJobStatus({ name, namespace: NS });
            return (j.status?.conditions ?? []).some(
              (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
            );
          },
          1_200_000,
          `Job ${name} finished`,
          1000,
        );
      try {
        const t0 = performance.now();
        await batch.createNamespacedJob({ namespace: NS, body: job('noop-budget', 3) });
        await finished('noop-budget');
        const seconds = (performance.now() - t0) / 1000;
        const status = (await batch.readNamespacedJobStatus({ name: 'noop-budget', namespace: NS })).status!;
        const runs = readFileSync(log, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => l.split(' ').map(Number) as [number, number, number]);
        // maxFailedIndexes 3: the 4th failed index fails the Job; nothing after it starts.
        expect(status.conditions?.find((c) => c.type === 'Failed')?.reason).toBe('MaxFailedIndexesExceeded');
        expect(parseIndexes(status.failedIndexes ?? undefined).size).toBeGreaterThanOrEqual(4);
        expect(new Set(runs.map((r) => r[0])).size).toBeLessThan(1000);
        // parallelism 25: never more than 25 shards at once, and the controller did run them in parallel.
        const edges = runs.flatMap(([, a, b]) => [
          [a, 1],
          [b, -1],
        ]);
        edges.sort((x, y) => x[0]! - y[0]! || x[1]! - y[1]!);
        let now = 0;
        let peak = 0;
        for (const [, d] of edges) {
          now += d!;
          peak = Math.max(peak, now);
        }
        expect(peak).toBeLessThanOrEqual(25);
        expect(peak).toBeGreaterThan(1);
        const ranBefore100 = runs.filter((r) => r[0] < 100).length;
        expect(ranBefore100).toBe(100);
        process.stderr.write(
          `[job-engine] no-op Job: ${runs.length} indexes ran in ${seconds.toFixed(0)} s, peak ${peak} at once (parallelism 25), failed indexes ${status.failedIndexes}, ${status.conditions?.find((c) => c.type === 'Failed')?.reason}\n`,
        );
      } finally {
        await noop.stop();
      }
    },
    CASE_MS,
  );
});
