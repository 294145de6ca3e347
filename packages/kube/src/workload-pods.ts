import type { V1Pod } from '@kubernetes/client-node';
import type { KubeClients } from './kube-clients.js';
import { kubeCall, statusOf } from './kube-error.js';
import type { KubeObject } from './kube-object.js';

/** The kinds whose pods a restart replaces (their controllers recreate a deleted pod from the template). */
export const WORKLOAD_KINDS: readonly string[] = ['Deployment', 'StatefulSet', 'DaemonSet'];

/** A workload of the push set: Deployment, StatefulSet or DaemonSet, by namespace and name. */
export interface WorkloadRef {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

/** The workloads among `objects`, in order. */
export function workloadsOf(objects: readonly KubeObject[]): WorkloadRef[] {
  return objects
    .filter((o) => WORKLOAD_KINDS.includes(o.kind) && o.metadata.namespace)
    .map((o) => ({ kind: o.kind, namespace: o.metadata.namespace ?? '', name: o.metadata.name }));
}

/** `Kind/namespace/name`. */
export function describeWorkload(w: WorkloadRef): string {
  return `${w.kind}/${w.namespace}/${w.name}`;
}

interface LiveWorkload {
  readonly spec?: { replicas?: number; selector?: { matchLabels?: Record<string, string> } };
}

async function readWorkload(clients: KubeClients, w: WorkloadRef): Promise<LiveWorkload | undefined> {
  return (await clients.rest.read({
    apiVersion: 'apps/v1',
    kind: w.kind,
    metadata: { name: w.name, namespace: w.namespace },
  })) as LiveWorkload | undefined;
}

/**
 * The label selector of `w` (its `matchLabels`, what every pushed workload declares), or undefined when `w` is gone.
 * @throws {KubeApiError} when it cannot be read.
 */
export async function workloadSelector(clients: KubeClients, w: WorkloadRef): Promise<string | undefined> {
  const live = await kubeCall(`read ${describeWorkload(w)}`, () => readWorkload(clients, w));
  const labels = live?.spec?.selector?.matchLabels;
  if (!labels || Object.keys(labels).length === 0) return undefined;
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** The pods in `namespace` that `labelSelector` selects, terminating ones included (they may still run). */
export async function selectedPods(clients: KubeClients, namespace: string, labelSelector: string): Promise<V1Pod[]> {
  const list = await kubeCall(`list the pods ${labelSelector} in ${namespace}`, () =>
    clients.core.listNamespacedPod({ namespace, labelSelector }),
  );
  return list.items;
}

/** The pods of `w` (none when it is gone). */
export async function workloadPods(clients: KubeClients, w: WorkloadRef): Promise<V1Pod[]> {
  const selector = await workloadSelector(clients, w);
  return selector ? selectedPods(clients, w.namespace, selector) : [];
}

/**
 * Deletes every pod `w` has now, so its controller starts new ones on what the cluster holds now (env and volumes
 * from Secrets are read when a container starts). Changes no declared object.
 * @returns the UIDs of the pods it had (terminating ones included): {@link restartState} waits for them to go.
 */
export async function deleteWorkloadPods(clients: KubeClients, w: WorkloadRef): Promise<string[]> {
  const pods = await workloadPods(clients, w);
  for (const p of pods.filter((x) => !x.metadata?.deletionTimestamp)) {
    const name = p.metadata?.name ?? '';
    await kubeCall(`delete Pod ${w.namespace}/${name}`, () =>
      clients.core.deleteNamespacedPod({ namespace: w.namespace, name }).catch((err: unknown) => {
        if (statusOf(err) !== 404) throw err;
      }),
    );
  }
  return pods.map((p) => p.metadata?.uid ?? '');
}

/** Where a restart of `w` stands: done once none of its old pods is left and the wanted pods are Ready. */
export interface RestartState {
  readonly isDone: boolean;
  /** What is still missing, for a timeout message. */
  readonly reason: string;
}

/**
 * Whether none of the pods `oldUids` names is left (terminating or not: a terminating pod may still run) and as many
 * pods as the workload wants are Ready.
 */
export async function restartState(
  clients: KubeClients,
  w: WorkloadRef,
  oldUids: readonly string[],
): Promise<RestartState> {
  const live = await kubeCall(`read ${describeWorkload(w)}`, () => readWorkload(clients, w));
  if (!live) return { isDone: false, reason: `${describeWorkload(w)} not found` };
  const pods = await workloadPods(clients, w);
  const old = pods.filter((p) => oldUids.includes(p.metadata?.uid ?? ''));
  if (old.length > 0) return { isDone: false, reason: `${old.length} old pod(s) of ${describeWorkload(w)} left` };
  const ready = pods.filter(isReady).length;
  // A DaemonSet has no replicas: one Ready pod per node it runs on.
  const want = w.kind === 'DaemonSet' ? Math.max(1, pods.length) : (live.spec?.replicas ?? 1);
  if (ready < want) return { isDone: false, reason: `${ready}/${want} pod(s) of ${describeWorkload(w)} Ready` };
  return { isDone: true, reason: '' };
}

/**
 * Deletes `w` (its controller's pods go with it, by garbage collection); absent is fine.
 * @returns whether it existed.
 */
export async function deleteWorkload(clients: KubeClients, w: WorkloadRef): Promise<boolean> {
  try {
    await kubeCall(`delete ${describeWorkload(w)}`, () =>
      clients.objects.delete(
        { apiVersion: 'apps/v1', kind: w.kind, metadata: { name: w.name, namespace: w.namespace } },
        undefined,
        undefined,
        undefined,
        undefined,
        'Background',
      ),
    );
    return true;
  } catch (err) {
    if (statusOf(err) === 404) return false;
    throw err;
  }
}

function isReady(p: V1Pod): boolean {
  return (
    !p.metadata?.deletionTimestamp &&
    (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
  );
}
