import { KubeApiError } from '@baton/errors';
import { type V1Lease, V1MicroTime } from '@kubernetes/client-node';
import type { KubeClients } from './kube-clients.js';
import { kubeCall, statusOf, toKubeApiError } from './kube-error.js';

/** Who holds the handoff lock: stored in the Lease's `holderIdentity` as JSON. */
export interface LockHolder {
  readonly runId: string;
  readonly user: string;
  readonly host: string;
  readonly pid: number;
}

/** Options of {@link acquireHandoffLock}. */
export interface AcquireLockOptions {
  readonly namespace: string;
  /** @default 'baton-handoff' */
  readonly name?: string;
  readonly holder: LockHolder;
  /** How long the lock is valid without release, in seconds (covers the whole run). */
  readonly durationSeconds: number;
  readonly now: () => Date;
  /** Whether a process of this host is alive, to take over a lock whose holder was killed. */
  readonly isPidAlive: (pid: number) => boolean;
  /**
   * Whether a holder on another host is known to be gone (a fleet shard's pod that has terminated): a pid says
   * nothing across hosts, and a replacement pod has a new name. Without it, only expiry frees another host's lock.
   */
  readonly isHolderGone?: (holder: LockHolder) => Promise<boolean>;
}

/** A held lock. */
export interface HandoffLock {
  readonly namespace: string;
  readonly name: string;
  readonly holder: LockHolder;
  /** True when a stale lease (expired, held by a dead process on this host, or by a holder known gone) was taken over. */
  readonly tookOverFrom: LockHolder | undefined;
}

/** Another run holds the handoff lock of the cluster (HTTP 409 semantics); `details.holder` names it. */
export class LockHeldError extends KubeApiError {
  override readonly name = 'LockHeldError';
}

/**
 * Takes the cluster-side handoff lock: a `coordination.k8s.io` Lease, created or, when stale, replaced with
 * optimistic concurrency (two racing runs cannot both win).
 * @throws {LockHeldError} naming the holder when another live run holds it.
 * @throws {KubeApiError} when the API fails.
 */
export async function acquireHandoffLock(clients: KubeClients, options: AcquireLockOptions): Promise<HandoffLock> {
  const name = options.name ?? 'baton-handoff';
  const { namespace } = options;
  // Lease times are MicroTime: a plain Date serialises with milliseconds, which the API server rejects.
  const now = new V1MicroTime(options.now().getTime());
  const spec = {
    holderIdentity: JSON.stringify(options.holder),
    leaseDurationSeconds: Math.ceil(options.durationSeconds),
    acquireTime: now,
    renewTime: now,
  };
  try {
    await clients.coordination.createNamespacedLease({ namespace, body: { metadata: { name, namespace }, spec } });
    return { namespace, name, holder: options.holder, tookOverFrom: undefined };
  } catch (err) {
    if (statusOf(err) !== 409) return kubeCall(`create Lease ${namespace}/${name}`, () => Promise.reject(err));
  }
  const existing = await kubeCall(`read Lease ${namespace}/${name}`, () =>
    clients.coordination.readNamespacedLease({ namespace, name }),
  );
  const holder = parseHolder(existing);
  if (!(await isStale(existing, holder, options))) throw lockedError(namespace, name, holder, existing);
  try {
    await clients.coordination.replaceNamespacedLease({
      namespace,
      name,
      body: { metadata: { name, namespace, resourceVersion: existing.metadata?.resourceVersion ?? '' }, spec },
    });
  } catch (err) {
    if (statusOf(err) === 409) throw lockedError(namespace, name, undefined, undefined);
    return kubeCall(`replace Lease ${namespace}/${name}`, () => Promise.reject(err));
  }
  return { namespace, name, holder: options.holder, tookOverFrom: holder };
}

/**
 * Renews the lock's Lease (`renewTime` = `now`) while this run still holds it, with optimistic concurrency, so a run
 * whose steps outlast `leaseDurationSeconds` (slow API calls, a waited-for audit log lock) is never taken for stale.
 * @throws {LockHeldError} when the Lease is gone or another run holds it now: this run has lost the cluster.
 * @throws {KubeApiError} when the API fails otherwise (the caller may retry).
 */
export async function renewHandoffLock(clients: KubeClients, lock: HandoffLock, now: Date): Promise<void> {
  const { namespace, name } = lock;
  const lost = (holder: LockHolder | undefined, why = 'its deletion') =>
    new LockHeldError(
      `lost the handoff lock (Lease ${namespace}/${name}) to ${holder ? `run ${holder.runId} by ${holder.user} on ${holder.host}` : why}; this run stops before pushing more`,
      { details: { status: 409, holder: holder ?? null, lease: `${namespace}/${name}` } },
    );
  let existing: V1Lease;
  try {
    existing = await clients.coordination.readNamespacedLease({ namespace, name });
  } catch (err) {
    if (statusOf(err) === 404) throw lost(undefined);
    throw toKubeApiError(err, `read Lease ${namespace}/${name}`);
  }
  const holder = parseHolder(existing);
  if (holder?.runId !== lock.holder.runId) throw lost(holder);
  const acquired = existing.spec?.acquireTime ? new Date(existing.spec.acquireTime).getTime() : now.getTime();
  try {
    await clients.coordination.replaceNamespacedLease({
      namespace,
      name,
      body: {
        metadata: { name, namespace, resourceVersion: existing.metadata?.resourceVersion ?? '' },
        spec: {
          ...existing.spec,
          acquireTime: new V1MicroTime(acquired),
          renewTime: new V1MicroTime(now.getTime()),
        },
      },
    });
  } catch (err) {
    if (statusOf(err) === 409) throw lost(undefined, 'a concurrent change');
    throw toKubeApiError(err, `renew Lease ${namespace}/${name}`);
  }
}

/** Releases the lock if this run still holds it. Never throws for a lock already gone. */
export async function releaseHandoffLock(clients: KubeClients, lock: HandoffLock): Promise<void> {
  try {
    const existing = await clients.coordination.readNamespacedLease({ namespace: lock.namespace, name: lock.name });
    if (parseHolder(existing)?.runId !== lock.holder.runId) return;
    await clients.coordination.deleteNamespacedLease({
      namespace: lock.namespace,
      name: lock.name,
      body: { preconditions: { resourceVersion: existing.metadata?.resourceVersion ?? '' } },
    });
  } catch (err) {
    if (statusOf(err) !== 404 && statusOf(err) !== 409)
      throw toKubeApiError(err, `release Lease ${lock.namespace}/${lock.name}`);
  }
}

function parseHolder(l: V1Lease): LockHolder | undefined {
  try {
    return JSON.parse(l.spec?.holderIdentity ?? '') as LockHolder;
  } catch {
    return undefined;
  }
}

async function isStale(l: V1Lease, holder: LockHolder | undefined, options: AcquireLockOptions): Promise<boolean> {
  const renew = l.spec?.renewTime ? new Date(l.spec.renewTime).getTime() : 0;
  const expires = renew + (l.spec?.leaseDurationSeconds ?? 0) * 1000;
  if (expires < options.now().getTime()) return true;
  if (!holder) return false;
  if (holder.host === options.holder.host) return !options.isPidAlive(holder.pid);
  return (await options.isHolderGone?.(holder)) ?? false;
}

function lockedError(
  namespace: string,
  name: string,
  holder: LockHolder | undefined,
  l: V1Lease | undefined,
): LockHeldError {
  const who = holder ? `run ${holder.runId} by ${holder.user} on ${holder.host} (pid ${holder.pid})` : 'another run';
  const since = l?.spec?.acquireTime ? ` since ${new Date(l.spec.acquireTime).toISOString()}` : '';
  return new LockHeldError(
    `cluster is locked by ${who}${since} (Lease ${namespace}/${name}); wait for it to finish, or delete the Lease if that run is gone`,
    { details: { status: 409, holder: holder ?? null, lease: `${namespace}/${name}` } },
  );
}
