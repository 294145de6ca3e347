import type { V1Job } from '@kubernetes/client-node';

/** A shard's exit code for a configuration error: the Job's podFailurePolicy fails the whole Job on it. */
export const SHARD_CONFIG_ERROR_EXIT = 2;
/** Label on a wave's Job, its pods and its ConfigMap. */
export const FLEET_RUN_LABEL = 'baton.dev/fleet-run';
/** The shard container's name (podFailurePolicy matches its exit code). */
export const SHARD_CONTAINER = 'shard';

/** Options of {@link buildWaveJob}. */
export interface WaveJobOptions {
  readonly name: string;
  readonly namespace: string;
  readonly fleetRunId: string;
  readonly wave: number;
  /** Clusters in the wave: `completions`; pod i hands off target i. */
  readonly completions: number;
  /** Handoffs at once: `parallelism`. */
  readonly parallelism: number;
  /** Retries per cluster: `backoffLimitPerIndex`. */
  readonly retries: number;
  /** Failures the budget still allows: `maxFailedIndexes` (one more fails the Job). */
  readonly budgetLeft: number;
  readonly image: string;
  readonly serviceAccountName: string;
  /** The container's args (`fleet shard --wave …`). */
  readonly args: readonly string[];
  /** Extra pod labels (e.g. a cost-allocation or test-run label). */
  readonly podLabels?: Readonly<Record<string, string>>;
}

/**
 * One wave as a Kubernetes Indexed Job: the Job controller enforces the rollout's rules across every worker —
 * parallelism is the concurrency, backoffLimitPerIndex the retries, maxFailedIndexes the budget left, and a shard
 * exiting with the configuration-error code fails the whole Job (nothing more starts).
 */
export function buildWaveJob(o: WaveJobOptions): V1Job {
  const labels = { [FLEET_RUN_LABEL]: o.fleetRunId, 'baton.dev/fleet-wave': String(o.wave) };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: o.name, namespace: o.namespace, labels: { ...labels, 'app.kubernetes.io/managed-by': 'baton' } },
    spec: {
      completionMode: 'Indexed',
      completions: o.completions,
      parallelism: Math.min(o.parallelism, o.completions),
      backoffLimitPerIndex: o.retries,
      // The API allows at most `completions`: more failures than indexes cannot happen anyway.
      maxFailedIndexes: Math.min(o.budgetLeft, o.completions),
      podReplacementPolicy: 'Failed',
      podFailurePolicy: {
        rules: [
          {
            action: 'FailJob',
            onExitCodes: { containerName: SHARD_CONTAINER, operator: 'In', values: [SHARD_CONFIG_ERROR_EXIT] },
          },
        ],
      },
      template: {
        metadata: { labels: { ...labels, ...(o.podLabels ?? {}) } },
        spec: {
          restartPolicy: 'Never',
          serviceAccountName: o.serviceAccountName,
          containers: [
            {
              name: SHARD_CONTAINER,
              image: o.image,
              args: [...o.args],
              // The shard's host in the target's handoff lock: an Indexed Job's pods share a hostname per index, and
              // a replacement takes the lock over from a terminated pod only by its name.
              env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
            },
          ],
        },
      },
    },
  };
}

/** Parses a Job's `completedIndexes`/`failedIndexes` (`"0-2,5"`) into a set. */
export function parseIndexes(text: string | undefined): Set<number> {
  const out = new Set<number>();
  for (const part of (text ?? '').split(',')) {
    if (!part) continue;
    const [a, b] = part.split('-').map(Number);
    for (let i = a!; i <= (b ?? a!); i++) out.add(i);
  }
  return out;
}
