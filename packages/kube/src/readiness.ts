import type { KubeClients } from './kube-clients.js';
import { kubeCall, statusOf } from './kube-error.js';
import type { KubeObject } from './kube-object.js';

/** Where a Deployment stands on its way to Available. */
export interface DeploymentState {
  readonly isAvailable: boolean;
  /** A short human reason when not available. */
  readonly reason: string;
}

/** The fields of a Deployment or StatefulSet the readiness checks read, as the apiserver's JSON has them. */
export interface WorkloadJson {
  readonly metadata?: { readonly generation?: number };
  readonly spec?: { readonly replicas?: number; readonly selector?: { readonly matchLabels?: Record<string, string> } };
  readonly status?: {
    readonly observedGeneration?: number;
    readonly availableReplicas?: number;
    readonly readyReplicas?: number;
    readonly updatedReplicas?: number;
    readonly conditions?: readonly { readonly type: string; readonly status: string; readonly message?: string }[];
  };
}

/**
 * Whether a Deployment as read (undefined: it does not exist) is Available for its current generation, from the object
 * alone: for callers that already hold it (a watch). `podsMayTell` is set when its pods' containers can say why not.
 */
export function deploymentStatus(d: WorkloadJson | undefined): DeploymentState & { readonly podsMayTell?: boolean } {
  if (!d) return { isAvailable: false, reason: 'not found' };
  const observed = d.status?.observedGeneration ?? 0;
  if (observed < (d.metadata?.generation ?? 0)) return { isAvailable: false, reason: 'generation not observed yet' };
  const available = d.status?.conditions?.find((c) => c.type === 'Available');
  const want = d.spec?.replicas ?? 1;
  const reason =
    available?.status !== 'True'
      ? (available?.message ?? 'no Available condition')
      : (d.status?.availableReplicas ?? 0) < want
        ? `${d.status?.availableReplicas ?? 0}/${want} available`
        : undefined;
  return reason === undefined
    ? { isAvailable: true, reason: 'available' }
    : { isAvailable: false, reason, podsMayTell: true };
}

/**
 * Reads a Deployment and says whether it is Available for its current generation, with its pods' reasons when not.
 * @throws {KubeApiError} when the read fails for another reason than "not found".
 */
export async function deploymentState(clients: KubeClients, namespace: string, name: string): Promise<DeploymentState> {
  let d: Awaited<ReturnType<KubeClients['apps']['readNamespacedDeployment']>>;
  try {
    d = await clients.apps.readNamespacedDeployment({ namespace, name });
  } catch (err) {
    if (statusOf(err) === 404) return { isAvailable: false, reason: 'not found' };
    return kubeCall(`read Deployment ${namespace}/${name}`, () => Promise.reject(err));
  }
  const s = deploymentStatus(d as WorkloadJson);
  if (!s.podsMayTell) return { isAvailable: s.isAvailable, reason: s.reason };
  const waiting = await waitingContainers(clients, namespace, d.spec?.selector?.matchLabels ?? {});
  return { isAvailable: false, reason: waiting.length > 0 ? `${s.reason}; ${waiting.join('; ')}` : s.reason };
}

/**
 * Why the Deployment's pods' containers wait, as the kubelet reports it (`ErrImagePull`, `CrashLoopBackOff`, with
 * its message, and for a container that ran, how it last ended: exit code, reason and its termination message,
 * which is the log tail under `FallbackToLogsOnError`), so that a takeover that times out says so. Best effort: a
 * failed list gives none.
 */
export async function waitingContainers(
  clients: KubeClients,
  namespace: string,
  matchLabels: Record<string, string>,
): Promise<string[]> {
  const labelSelector = Object.entries(matchLabels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  if (!labelSelector) return [];
  const pods = await clients.core.listNamespacedPod({ namespace, labelSelector }).catch(() => undefined);
  return (pods?.items ?? []).flatMap((p) =>
    (p.status?.containerStatuses ?? []).flatMap((c) => {
      const w = c.state?.waiting;
      if (!w?.reason) return [];
      const t = c.lastState?.terminated;
      const last = t
        ? `; last exited with code ${t.exitCode}${t.reason ? ` (${t.reason})` : ''}${t.message ? `: ${t.message.trim().split('\n').slice(-5).join(' | ').slice(0, 500)}` : ''}`
        : '';
      return [`pod ${p.metadata?.name} container ${c.name} ${w.reason}: ${w.message ?? ''}`.trim() + last];
    }),
  );
}

/** Who owns an object's fields, from `managedFields`. */
export interface FieldOwnership {
  /** Field managers with an entry (excluding status subresources), sorted. */
  readonly managers: readonly string[];
  /** True when `manager` applied the object (operation Apply). */
  readonly isAppliedBy: boolean;
  /** Managers in `foreign` that still own fields. */
  readonly foreignOwners: readonly string[];
}

/**
 * Reads `managedFields`: whether `manager` applies the object and which of `foreign` managers still own fields.
 * Status subresource entries (controllers reporting status) do not count.
 */
export function fieldOwnership(o: KubeObject, manager: string, foreign: readonly string[]): FieldOwnership {
  const entries = (
    (o.metadata.managedFields as { manager?: string; operation?: string; subresource?: string }[] | undefined) ?? []
  ).filter((e) => !e.subresource);
  const managers = [...new Set(entries.map((e) => e.manager ?? ''))].sort();
  return {
    managers,
    isAppliedBy: entries.some((e) => e.manager === manager && e.operation === 'Apply'),
    foreignOwners: managers.filter((m) => foreign.includes(m)),
  };
}

/** Reads a dotted path (`status.lastAppliedRevision`, `data.revision`) from an object; undefined when absent. */
export function readPath(o: unknown, path: string): unknown {
  let cur: unknown = o;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

/** Whether a StatefulSet as read (undefined: absent) has every replica of its current revision ready; pure. */
export function statefulSetStatus(s: WorkloadJson | undefined): DeploymentState {
  if (!s) return { isAvailable: false, reason: 'not found' };
  if ((s.status?.observedGeneration ?? 0) < (s.metadata?.generation ?? 0))
    return { isAvailable: false, reason: 'generation not observed yet' };
  const want = s.spec?.replicas ?? 1;
  const ready = s.status?.readyReplicas ?? 0;
  if (ready < want) return { isAvailable: false, reason: `${ready}/${want} ready` };
  if ((s.status?.updatedReplicas ?? 0) < want)
    return { isAvailable: false, reason: `${s.status?.updatedReplicas ?? 0}/${want} updated` };
  return { isAvailable: true, reason: 'ready' };
}

/**
 * Reads a StatefulSet and says whether every replica of its current revision is ready (the StatefulSet controller
 * has observed its generation, `readyReplicas` and `updatedReplicas` reach `spec.replicas`). Uses the same shape as
 * {@link deploymentState}.
 * @throws {KubeApiError} when the read fails for another reason than "not found".
 */
export async function statefulSetState(
  clients: KubeClients,
  namespace: string,
  name: string,
): Promise<DeploymentState> {
  let s: Awaited<ReturnType<KubeClients['apps']['readNamespacedStatefulSet']>>;
  try {
    s = await clients.apps.readNamespacedStatefulSet({ namespace, name });
  } catch (err) {
    if (statusOf(err) === 404) return { isAvailable: false, reason: 'not found' };
    return kubeCall(`read StatefulSet ${namespace}/${name}`, () => Promise.reject(err));
  }
  return statefulSetStatus(s as WorkloadJson);
}
