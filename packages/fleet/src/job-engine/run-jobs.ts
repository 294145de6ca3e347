import type { HandoffRecord } from '@baton/audit';
import { type AuditSink, type Clock, type HandoffSummary, type Logger, planAsInput } from '@baton/core';
import { ConfigError } from '@baton/errors';
import { type KubeClients, kubeCall } from '@baton/kube';
import { BatchV1Api, type V1Job, type V1Pod } from '@kubernetes/client-node';
import type { FleetTarget } from '../cluster-plans.js';
import type { ClusterResult, FleetProgressEvent, FleetResult } from '../fleet-result.js';
import { notStarted, runWaves } from '../wave-rollout.js';
import type { Wave } from '../waves.js';
import { TargetJournal } from './target-journal.js';
import { buildWaveJob, FLEET_RUN_LABEL, parseIndexes } from './wave-job.js';

/** What a wave's ConfigMap tells shard i: its target. */
export interface ShardTarget {
  readonly cluster: string;
  /** The fleet file and cluster, for messages. */
  readonly file: string;
  /** The rendered handoff plan (absolute paths: the shard's image must carry the plan's files at those paths). */
  readonly plan: unknown;
  readonly secretRef: {
    readonly namespace: string;
    readonly name: string;
    readonly key: string;
    readonly context?: string;
  };
}

/** Options of {@link runJobFleet}. */
export interface JobFleetOptions {
  readonly waves: readonly Wave<FleetTarget>[];
  readonly concurrency: number;
  readonly budget: number;
  readonly retries: number;
  readonly clock: Clock;
  readonly log: Logger;
  /** The management cluster. */
  readonly management: KubeClients;
  readonly namespace: string;
  readonly image: string;
  readonly serviceAccountName: string;
  readonly podLabels?: Readonly<Record<string, string>>;
  readonly fleetRunId: string;
  /** Signs and appends the shards' records (the fleet run's one writer). */
  readonly sink: AuditSink;
  readonly signal?: AbortSignal;
  readonly onEvent?: (e: FleetProgressEvent) => void;
  /** @default 1000 */
  readonly pollIntervalMs?: number;
  /** The shard container's args for a wave ConfigMap. @default ['fleet', 'shard', '--wave', name, '--namespace', ns] */
  readonly shardArgs?: (waveConfig: string, namespace: string) => readonly string[];
}

/**
 * The Job engine: each wave is one Indexed Job on the management cluster (see buildWaveJob), started only when the
 * previous wave's Job has finished and the budget holds; its `maxFailedIndexes` is the budget left. Progress is the
 * Job's own `completedIndexes`/`failedIndexes`. Meanwhile the orchestrator signs and appends each shard's record
 * into the fleet's one log (shards hold no signing key) and hands the result back through the target's journal.
 * @throws {ConfigError} when a target has no kubeconfig Secret on the management cluster.
 */
export async function runJobFleet(o: JobFleetOptions): Promise<FleetResult<HandoffSummary>> {
  const batch = o.management.kc.makeApiClient(BatchV1Api);
  for (const t of o.waves.flatMap((w) => w.clusters)) {
    if (t.kubeconfig.kind !== 'secret')
      throw new ConfigError(
        `cluster "${t.name}": --engine job reads each target's kubeconfig from a Secret on the management cluster; give it a secretRef (Cluster API: <name>-kubeconfig)`,
      );
  }
  // The Job's maxFailedIndexes is the budget left: Kubernetes stops the wave when it is spent.
  return runWaves({ ...o, runWave: (wave, budget) => runWave(o, batch, wave, budget.left) });
}

async function runWave(
  o: JobFleetOptions,
  batch: BatchV1Api,
  wave: Wave<FleetTarget>,
  budgetLeft: number,
): Promise<ClusterResult<HandoffSummary>[]> {
  const name = `${o.fleetRunId}-w${wave.index}`.slice(0, 63);
  const targets = shardTargets(wave);
  const journals = targets.map((t) => new TargetJournal(o.management, o.namespace, t.cluster));
  await submitWaveJob(o, batch, { name, wave, targets, journals }, budgetLeft);
  const { started, finished } = await watchWaveJob(o, batch, { name, wave, targets, journals });
  await serveRecords(o, journals);
  return targets.map(
    (t, i) =>
      finished.get(i) ??
      (started.has(i)
        ? {
            name: t.cluster,
            wave: wave.index,
            status: 'aborted',
            attempts: started.get(i)!.size,
            durationMs: 0,
            error: 'the wave Job ended before this index finished',
          }
        : notStarted({ name: t.cluster }, wave)),
  );
}

/** One wave as Kubernetes sees it: its Job and ConfigMap name, and one shard (completion index) per cluster. */
interface WaveJob {
  readonly name: string;
  readonly wave: Wave<FleetTarget>;
  readonly targets: readonly ShardTarget[];
  /** By completion index: where each shard keeps its progress and asks for its record to be signed. */
  readonly journals: readonly TargetJournal[];
}

/** What each shard reads from the wave's ConfigMap: its cluster, plan and kubeconfig Secret. */
function shardTargets(wave: Wave<FleetTarget>): ShardTarget[] {
  return wave.clusters.map((t) => {
    const k = t.kubeconfig as Extract<FleetTarget['kubeconfig'], { kind: 'secret' }>;
    return {
      cluster: t.name,
      file: t.loaded.file,
      plan: planAsInput(t.loaded.plan),
      secretRef: { namespace: k.namespace, name: k.name, key: k.key, ...(k.context ? { context: k.context } : {}) },
    };
  });
}

/** Creates the wave's ConfigMap of targets and its Indexed Job. */
async function submitWaveJob(o: JobFleetOptions, batch: BatchV1Api, w: WaveJob, budgetLeft: number): Promise<void> {
  const { name, wave, targets } = w;
  await kubeCall(`create ConfigMap ${o.namespace}/${name} (the targets of wave ${wave.index + 1})`, () =>
    o.management.core.createNamespacedConfigMap({
      namespace: o.namespace,
      body: {
        metadata: { name, namespace: o.namespace, labels: { [FLEET_RUN_LABEL]: o.fleetRunId } },
        data: { 'targets.json': JSON.stringify(targets), fleetRunId: o.fleetRunId },
      },
    }),
  );
  // A summary left by an earlier run must not be taken for this one's.
  for (const j of w.journals) await j.update((d) => (d.summary ? { ...d, summary: undefined } : undefined));
  const job = buildWaveJob({
    name,
    namespace: o.namespace,
    fleetRunId: o.fleetRunId,
    wave: wave.index,
    completions: targets.length,
    parallelism: o.concurrency,
    retries: o.retries,
    budgetLeft,
    image: o.image,
    serviceAccountName: o.serviceAccountName,
    args: (o.shardArgs ?? defaultShardArgs)(name, o.namespace),
    ...(o.podLabels ? { podLabels: o.podLabels } : {}),
  });
  await kubeCall(`create Job ${o.namespace}/${name}`, () =>
    batch.createNamespacedJob({ namespace: o.namespace, body: job }),
  );
}

/**
 * Follows the wave's Job until it finishes (or, once the run is aborted and the Job suspended, until no pod runs),
 * signing records as shards ask and reporting each index as it starts and ends.
 * @returns the pod uids seen per index (attempts), and the result of each index that ended.
 */
async function watchWaveJob(
  o: JobFleetOptions,
  batch: BatchV1Api,
  w: WaveJob,
): Promise<{ started: Map<number, Set<string>>; finished: Map<number, ClusterResult<HandoffSummary>> }> {
  const emit = o.onEvent ?? (() => {});
  const { name, wave } = w;
  const startMs = o.clock.monotonicMs();
  const started = new Map<number, Set<string>>();
  const finished = new Map<number, ClusterResult<HandoffSummary>>();
  let suspended = false;
  for (;;) {
    await serveRecords(o, w.journals);
    const current = await batch.readNamespacedJobStatus({ name, namespace: o.namespace });
    const pods = await o.management.core.listNamespacedPod({
      namespace: o.namespace,
      labelSelector: `job-name=${name}`,
    });
    for (const i of notePods(pods.items, started)) {
      emit({ type: 'cluster-started', wave: wave.index, cluster: w.targets[i]!.cluster, attempt: 1 });
    }
    for (const [i, set] of endedIndexes(current)) {
      if (finished.has(i)) continue;
      const attempts = started.get(i)?.size ?? 1;
      const r = await indexResult(w.journals[i]!, wave.index, set, attempts, o.clock.monotonicMs() - startMs);
      finished.set(i, r);
      emit({ type: 'cluster-finished', wave: wave.index, result: r });
    }
    if (isFinished(current)) break;
    if (o.signal?.aborted && !suspended) {
      await suspendJob(o, batch, name);
      suspended = true;
    }
    if (suspended && pods.items.every((p) => p.status?.phase !== 'Running' && p.status?.phase !== 'Pending')) break;
    await o.clock.sleep(o.pollIntervalMs ?? 1000);
  }
  return { started, finished };
}

/** Records each pod's uid under its completion index; returns the indexes seen for the first time. */
function notePods(pods: readonly V1Pod[], started: Map<number, Set<string>>): number[] {
  const first: number[] = [];
  for (const p of pods) {
    const i = Number(p.metadata?.annotations?.['batch.kubernetes.io/job-completion-index']);
    if (!Number.isInteger(i) || !p.metadata?.uid) continue;
    const seen = started.get(i) ?? new Set<string>();
    if (seen.size === 0) first.push(i);
    seen.add(p.metadata.uid);
    started.set(i, seen);
  }
  return first;
}

/** The completed and failed indexes of a Job. */
function endedIndexes(job: V1Job): [number, 'done' | 'failed'][] {
  const done = parseIndexes(job.status?.completedIndexes);
  const failed = parseIndexes(job.status?.failedIndexes ?? undefined);
  return [
    ...[...done].map((i): [number, 'done'] => [i, 'done']),
    ...[...failed].map((i): [number, 'failed'] => [i, 'failed']),
  ];
}

/** Suspending deletes the running pods: their shards get SIGTERM and still revoke, prove and record. */
async function suspendJob(o: JobFleetOptions, batch: BatchV1Api, name: string): Promise<void> {
  await batch
    .readNamespacedJob({ name, namespace: o.namespace })
    .then((j) =>
      batch.replaceNamespacedJob({
        name,
        namespace: o.namespace,
        body: { ...j, spec: { ...j.spec!, suspend: true } },
      }),
    )
    .catch((err: unknown) => o.log.warn({ err: String(err) }, 'could not suspend the wave Job'));
}

function defaultShardArgs(waveConfig: string, namespace: string): string[] {
  return ['fleet', 'shard', '--wave', waveConfig, '--namespace', namespace];
}

function isFinished(job: V1Job): boolean {
  return (job.status?.conditions ?? []).some(
    (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  );
}

/** Signs and appends every record a shard of this wave is waiting on, and answers it through the target journal. */
async function serveRecords(o: JobFleetOptions, journals: readonly TargetJournal[]): Promise<void> {
  for (const j of journals) {
    const { data } = await j.read();
    if (!data.pendingRecord) continue;
    let answer: string;
    try {
      const record = JSON.parse(data.pendingRecord) as HandoffRecord;
      const r = await o.sink.append(record);
      answer = JSON.stringify({ runId: record.runId, ...r });
    } catch (err) {
      answer = JSON.stringify({ error: (err as Error).message });
    }
    const pending = data.pendingRecord;
    await j.update((d) =>
      d.pendingRecord === pending ? { ...d, pendingRecord: undefined, appended: answer } : undefined,
    );
  }
}

async function indexResult(
  journal: TargetJournal,
  wave: number,
  how: 'done' | 'failed',
  attempts: number,
  elapsedMs: number,
): Promise<ClusterResult<HandoffSummary>> {
  const { data } = await journal.read();
  const summary = data.summary ? (JSON.parse(data.summary) as HandoffSummary) : undefined;
  const status: ClusterResult['status'] =
    how === 'failed' ? 'failed' : summary?.outcome === 'already-handed-off' ? 'already-handed-off' : 'handed-off';
  return {
    name: journal.cluster,
    wave,
    status,
    attempts,
    durationMs: Math.round(elapsedMs),
    ...(how === 'failed' ? { error: summary?.error ?? 'the shard failed every attempt (see its pod log)' } : {}),
    ...(summary?.failedStep && how === 'failed' ? { failedStep: summary.failedStep } : {}),
    ...(summary ? { summary } : {}),
  };
}
