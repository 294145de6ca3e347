import type { Logger } from 'pino';
import type { Clock } from './clock.js';
import { type KubeClient, statusOfError } from './kube-client.js';

/** Options of {@link LeaderElector}. */
export interface LeaderElectorOptions {
  readonly kube: KubeClient;
  readonly log: Logger;
  readonly clock: Clock;
  /** Namespace of the Lease. */
  readonly namespace: string;
  /** Lease name. */
  readonly name: string;
  /** This replica's identity (pod name). */
  readonly identity: string;
  /** How long a lease is valid without renewal. @default 15 */
  readonly leaseDurationSeconds?: number;
  /** How often the holder renews and a candidate retries. @default 2_000 */
  readonly retryMs?: number;
}

interface Lease {
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec?: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number;
    renewTime?: string | null;
    acquireTime?: string | null;
    leaseTransitions?: number;
  };
}

/**
 * Leader election on a `coordination.k8s.io/v1` Lease, as client-go does it: acquire when the
 * Lease is free or expired, renew every `retryMs`, and use the resourceVersion for optimistic
 * concurrency so that two candidates can never both win. Releases the Lease on stop so that a
 * standby takes over at once instead of after `leaseDurationSeconds`.
 */
export class LeaderElector {
  private readonly o: LeaderElectorOptions;
  private leading = false;
  private readonly listeners = new Set<(isLeader: boolean) => void>();
  private observed: { record: string; atMs: number } | undefined;
  /** Who held the Lease at the last look (for readiness of standby replicas). */
  observedHolder: string | undefined;

  constructor(options: LeaderElectorOptions) {
    this.o = options;
  }

  /** True while this replica holds a valid Lease. */
  get isLeader(): boolean {
    return this.leading;
  }

  /** Calls `fn` on every change of leadership. */
  onChange(fn: (isLeader: boolean) => void): void {
    this.listeners.add(fn);
  }

  private path(name = this.o.name) {
    return `/apis/coordination.k8s.io/v1/namespaces/${this.o.namespace}/leases${name ? `/${name}` : ''}`;
  }

  private set(isLeader: boolean) {
    if (isLeader === this.leading) return;
    this.leading = isLeader;
    this.o.log.info(
      { identity: this.o.identity, lease: `${this.o.namespace}/${this.o.name}`, isLeader },
      isLeader ? 'acquired leadership' : 'lost leadership',
    );
    for (const fn of this.listeners) fn(isLeader);
  }

  /** Tries once to acquire or renew; returns whether this replica leads afterwards. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const { kube, clock, identity } = this.o;
    const duration = this.o.leaseDurationSeconds ?? 15;
    const now = new Date(clock.now()).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
    try {
      const lease = await kube.get<Lease>(this.path());
      if (!lease) {
        await kube.call('POST', this.path(''), {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.o.name, namespace: this.o.namespace },
          spec: {
            holderIdentity: identity,
            leaseDurationSeconds: duration,
            acquireTime: now,
            renewTime: now,
            leaseTransitions: 0,
          },
        });
        this.observedHolder = identity;
        this.set(true);
        return true;
      }
      const holder = lease.spec?.holderIdentity ?? undefined;
      this.observedHolder = holder;
      // As client-go: expiry counts from when *we* saw the record change, not from the holder's
      // renewTime, so clock skew between replicas cannot make a live leader look expired.
      const record = `${holder}/${lease.spec?.renewTime}`;
      if (record !== this.observed?.record) this.observed = { record, atMs: clock.now() };
      const expired =
        !holder || this.observed.atMs + (lease.spec?.leaseDurationSeconds ?? duration) * 1000 < clock.now();
      if (holder !== identity && !expired) {
        this.set(false);
        return false;
      }
      const transitions = (lease.spec?.leaseTransitions ?? 0) + (holder === identity ? 0 : 1);
      await kube.call('PUT', this.path(), {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: this.o.name, namespace: this.o.namespace, resourceVersion: lease.metadata.resourceVersion },
        spec: {
          holderIdentity: identity,
          leaseDurationSeconds: duration,
          acquireTime: holder === identity ? lease.spec?.acquireTime : now,
          renewTime: now,
          leaseTransitions: transitions,
        },
      });
      this.observedHolder = identity;
      this.set(true);
      return true;
    } catch (err) {
      // 409: another candidate won the race; anything else: we cannot prove we still lead.
      if (statusOfError(err) === 409) {
        // Note the winner now, so this standby reports ready at once rather than one retry period later.
        const lease = await kube.get<Lease>(this.path()).catch(() => undefined);
        this.observedHolder = lease?.spec?.holderIdentity ?? undefined;
      } else this.o.log.warn({ err: (err as Error).message }, 'lease renewal failed');
      this.set(false);
      return false;
    }
  }

  /** Runs the election until `signal` aborts, then releases the Lease if held. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.tryAcquireOrRenew();
      try {
        await this.o.clock.sleep(this.o.retryMs ?? 2_000, signal);
      } catch {
        break;
      }
    }
    await this.release();
  }

  /** Gives the Lease up (holder cleared) so a standby can take over without waiting for expiry. */
  async release(): Promise<void> {
    if (!this.leading) return;
    this.set(false);
    try {
      const lease = await this.o.kube.get<Lease>(this.path());
      if (lease?.spec?.holderIdentity !== this.o.identity) return;
      await this.o.kube.call('PUT', this.path(), {
        ...lease,
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        spec: { ...lease.spec, holderIdentity: null, renewTime: null },
      });
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message }, 'lease release failed; a standby takes over when it expires');
    }
  }
}
