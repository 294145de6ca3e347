import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type HandoffRecord, loadTrustedKeys, readEntries, verifyLog } from '@baton/audit';
import type { HandoffPlan } from '@baton/core';
import { buildWaveJob, defaultShardImage, journalName, parseIndexes } from '@baton/fleet';
import { clientsFromKubeconfigFile, type KubeClients } from '@baton/kube';
import {
  type BatonControllerEnv,
  deleteNamespacesAndWait,
  type RealFleetTarget,
  setSchedulable,
  startRealFleetTargets,
  stopRealFleetTargets,
  targetOverrides,
  writeFleetFile,
  writeFleetTemplate,
} from '@baton/testbed';
import { type Cluster, linkBeds, startCluster } from '@baton/testenv';
import { pushShardImage } from '@baton/testenv/images';
import { BatchV1Api, type V1Job } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fleetUp } from '../../support/fleet-env.js';
import { eventually } from '../../support/kube.js';

// The Job engine against a management cluster with a real node: its kube-controller-manager runs the real Job
// controller, and kubelet and containerd run each shard pod from the baton CLI image the Job engine pins, with the
// plan's files added (ADR 0008: the shard reads them where the orchestrator rendered them). The 3 targets are beds of
// their own with a real node each, where baton-controller takes over from its bed's Git server; each is linked to the
// management bed (`linkBeds`) so that the shard Pods reach its apiserver. A held-back controller is a cordoned node.

const CASE_MS = 1_200_000;
const NS = 'baton-fleet';
const SA = 'baton-fleet-shard';

let management: Cluster;
let targetBeds: RealFleetTarget[] = [];
let targets: Cluster[] = [];
/** The first target's side: its plan is the fleet's defaults, its audit log the fleet's. */
let env: BatonControllerEnv;
let template = '';
let mgmt: KubeClients;
let batch: BatchV1Api;
let image: string;
let planFilesDir: string | undefined;

async function setUpManagement(k: KubeClients) {
  await k.core.createNamespace({ body: { metadata: { name: NS } } });
  await k.core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: SA } } });
  await k.rbac.createNamespacedRole({
    namespace: NS,
    body: {
      metadata: { name: SA },
      // The README's shard role: its wave's targets and its journal, the targets' kubeconfig Secrets, and its Job's
      // pods (a replacement pod takes a target's handoff lock over from a terminated one).
      rules: [
        { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'create', 'update'] },
        { apiGroups: [''], resources: ['secrets'], verbs: ['get'] },
        { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
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

/** The files a rendered plan reads (absolute paths), which the shard's image must carry. */
function planFiles(plan: HandoffPlan): string[] {
  return [
    plan.push.manifests,
    ...plan.push.secrets.map((s) => s.fromFile),
    ...(plan.pull.credential.fromFile ? [plan.pull.credential.fromFile] : []),
    ...(plan.takeover.profile ? [plan.takeover.profile] : []),
    ...(plan.push.images.trustedKeys ? [plan.push.images.trustedKeys] : []),
  ];
}

function fleetFile(
  name: string,
  clusters: readonly Cluster[],
  o: { budget: number; retries: number; overrides?: Record<string, Record<string, unknown>> },
) {
  const sideOf = (c: Cluster) => targetBeds.find((t) => t.cluster === c)!.side;
  const path = writeFleetFile(join(env.dir, `${name}.yaml`), {
    template,
    clusters: [],
    waves: [{ count: 1 }, {}],
    concurrency: 2,
    failureBudget: o.budget,
    retries: o.retries,
    extra: {
      clusters: clusters.map((c) => ({
        name: c.name,
        secretRef: { name: `${c.name}-kubeconfig`, namespace: NS },
        overrides: { ...targetOverrides(sideOf(c)), ...o.overrides?.[c.name] },
      })),
      job: { image, namespace: NS, serviceAccountName: SA },
    },
  });
  return path;
}

const jobsOf = async (fleetRunId: string) =>
  (await batch.listNamespacedJob({ namespace: NS, labelSelector: `baton.dev/fleet-run=${fleetRunId}` })).items;

beforeAll(async () => {
  management = await startCluster({ name: `fleet-mgmt-${process.pid}`, node: 'real' });
  // The shard image carries each target's plan files at their paths, outside /tmp (the image's volume is there).
  planFilesDir = mkdtempSync('/var/tmp/baton-fleet-plan-');
  const mgmtNode = management.realNode!;
  targetBeds = await startRealFleetTargets(3, `fleet-target-${process.pid}`, {
    sidesDir: planFilesDir,
    onCluster: (c) => linkBeds(mgmtNode, c.realNode!),
  });
  targets = targetBeds.map((t) => t.cluster);
  env = targetBeds[0]!.side;
  template = writeFleetTemplate(env, 300);
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
  const files = targetBeds.flatMap((t) => planFiles(t.side.loaded.plan));
  image = await pushShardImage(mgmtNode.pushImage, defaultShardImage(), files);
}, 900_000);

afterAll(async () => {
  // Each target's link to the management bed goes with either namespace.
  await stopRealFleetTargets(targetBeds);
  await management?.stop();
  if (planFilesDir) rmSync(planFilesDir, { recursive: true, force: true });
});

describe('baton fleet up --engine job', () => {
  it(
    'hands off every target through Indexed Jobs; a shard pod killed mid-handoff is retried and resumes',
    async () => {
      const killed = targets[2]!;
      // Its controller waits (its Pod stays Pending): the shard stays in the takeover wait, credential live and lock
      // held, until killed.
      await setSchedulable(killed, false);
      const run = fleetUp([
        '-f',
        fleetFile('job', targets, { budget: 0, retries: 1 }),
        '--engine',
        'job',
        '--management-kubeconfig',
        management.kubeconfigPath,
      ]);
      // Awaited below; a failure before that must not surface as an unhandled rejection, and ends the waits at once.
      let ended: string | undefined;
      run.then(
        (r) => {
          ended = `baton fleet up exited ${r.code} early:\n${r.stderr.slice(-3000)}`;
        },
        (err: Error) => {
          ended = err.message;
        },
      );
      const unlessEnded = (check: () => Promise<boolean>) => async () => {
        if (ended) throw new Error(ended);
        return check();
      };
      const target = clientsFromKubeconfigFile(killed.kubeconfigPath);
      let holder = '';
      await eventually(
        unlessEnded(async () => {
          const cm = await mgmt.core
            .readNamespacedConfigMap({ namespace: NS, name: journalName(killed.name) })
            .catch(() => undefined);
          if (!cm?.data?.journal?.includes('"step":"takeover"')) return false;
          const lease = await target.coordination.readNamespacedLease({
            namespace: 'baton-system',
            name: 'baton-handoff',
          });
          holder = (JSON.parse(lease.spec?.holderIdentity ?? '{}') as { host?: string }).host ?? '';
          return holder !== '';
        }),
        300_000,
        `the shard of ${killed.name} waiting for the takeover`,
        200,
      );
      // The lock's holder is the shard's pod (its hostname): kill -9 its process, as a node failure or an OOM would.
      const pod = await mgmt.core.readNamespacedPod({ namespace: NS, name: holder });
      const containerId = pod.status?.containerStatuses?.[0]?.containerID ?? '';
      process.kill(management.realNode!.containerPid(containerId), 'SIGKILL');
      // The replacement pod takes the lock over from the terminated one, cleans the killed run up, and hands off anew:
      // its controller starts once that second run waits for the takeover too.
      await eventually(
        unlessEnded(async () => {
          const cm = await mgmt.core.readNamespacedConfigMap({ namespace: NS, name: journalName(killed.name) });
          const entries = (cm.data?.journal ?? '')
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l) as { runId: string; step: string });
          return new Set(entries.filter((e) => e.step === 'takeover').map((e) => e.runId)).size >= 2;
        }),
        300_000,
        `the replacement shard of ${killed.name} waiting for the takeover`,
        200,
      );
      await setSchedulable(killed, true);
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
      // Every shard ran the image named in the fleet file, by its digest.
      for (const p of pods.items) expect(p.status?.containerStatuses?.[0]?.imageID).toContain(image.split('@')[1]);

      // The replacement resumed from the journal on the management cluster: the killed run is recorded (aborted, with its
      // credential), then the new one handed off; all through the orchestrator into one log that verifies.
      const records: HandoffRecord[] = [];
      for await (const e of readEntries(env.auditLogPath)) records.push(e.statement.predicate);
      const mine = records.filter((x) => x.cluster.name === killed.name);
      expect(mine.map((x) => [x.outcome, x.failedStep])).toEqual([
        ['aborted', 'takeover'],
        ['handed-off', undefined],
      ]);
      expect(mine[0]!.credential?.fingerprint).not.toBe(mine[1]!.credential?.fingerprint);
      const cm = await mgmt.core.readNamespacedConfigMap({ namespace: NS, name: journalName(killed.name) });
      expect(cm.data?.journal).toContain('"step":"takeover"');
      const v = await verifyLog(env.auditLogPath, await loadTrustedKeys(env.keysPath));
      expect(v.failures).toEqual([]);
    },
    CASE_MS,
  );

  it(
    'a failing canary with a budget of 0 fails its Job, and the next wave’s Job is never created (exit 1)',
    async () => {
      const [canary, next] = [targets[0]!, targets[1]!];
      await deleteNamespacesAndWait(canary.kubeconfigPath, ['baton-system']);
      await setSchedulable(canary, false);
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
      // Each pod (Node.js from the shard image) appends "index start end" (ms) to a file on a hostPath volume, sleeps
      // 300 ms, and fails for six chosen indexes.
      const dir = join(env.dir, 'noop');
      mkdirSync(dir);
      chmodSync(dir, 0o777);
      const log = join(dir, 'runs.log');
      writeFileSync(log, '');
      chmodSync(log, 0o666);
      const failing = [3, 5, 7, 11, 13, 17].map((i) => i + 30);
      const script = `const i=+process.env.JOB_COMPLETION_INDEX,a=Date.now();setTimeout(()=>{require('fs').appendFileSync('/runs/runs.log',i+' '+a+' '+Date.now()+'\\n');process.exit(${JSON.stringify(failing)}.includes(i)?1:0)},300)`;
      const job = (name: string, budgetLeft: number): V1Job => {
        const j = buildWaveJob({
          name,
          namespace: NS,
          fleetRunId: name,
          wave: 0,
          completions: 1000,
          parallelism: 25,
          retries: 0,
          budgetLeft,
          image,
          serviceAccountName: SA,
          args: [],
        });
        const spec = j.spec!.template.spec!;
        spec.volumes = [{ name: 'runs', hostPath: { path: dir, type: 'Directory' } }];
        spec.containers[0] = {
          ...spec.containers[0]!,
          command: ['/usr/local/bin/node', '-e', script],
          volumeMounts: [{ name: 'runs', mountPath: '/runs' }],
        };
        return j;
      };
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
        const ranBefore30 = runs.filter((r) => r[0] < 30).length;
        expect(ranBefore30).toBe(30);
        process.stderr.write(
          `[job-engine] no-op Job: ${runs.length} indexes ran in ${seconds.toFixed(0)} s, peak ${peak} at once (parallelism 25), failed indexes ${status.failedIndexes}, ${status.conditions?.find((c) => c.type === 'Failed')?.reason}\n`,
        );
      } finally {
        await batch.deleteNamespacedJob({ namespace: NS, name: 'noop-budget', propagationPolicy: 'Background' });
      }
    },
    CASE_MS,
  );
});
