import type { Clock } from '@baton/core/clock';
import { ConfigError } from '@baton/errors';
import { type KubeRestClient, statusOfError } from '@baton/kube/rest';
import type { Logger } from 'pino';

/** Options of {@link LeaderElector}. */
export interface LeaderElectorOptions {
  readonly kube: KubeRestClient;
  readonly log: Logger;
  readonly clock: Clock;
  /** Namespace of the Lease. */
  readonly namespace: string;
  /** Lease name. */
  readonly name: string;
  /** This replica's identity (pod name). */
  readonly identity: string;
  /** How long a lease is valid without renewal, in seconds. @default 15 */
  readonly leaseDurationSeconds?: number;
  /**
   * How long the leader keeps acting on its last successful renewal, counted from when that renewal was sent;
   * past it, it stops leading and aborts a hung renewal. Must be shorter than the lease duration, so that it has
   * stopped before any other replica can see the lease expire.
   * @default 10_000, or two thirds of a shorter lease duration
   */
  readonly renewDeadlineMs?: number;
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
 * Leader election on a `coordination.k8s.io/v1` Lease, as client-go's leaderelection does it: acquire when the
 * Lease is free or expired, renew every `retryMs`, use the resourceVersion for optimistic concurrency so that two
 * candidates can never both win, and stop leading when no renewal has succeeded within the renew deadline (a hung
 * request is aborted at the deadline). {@link LeaderElector.isLeader} is computed from the clock, not from the last
 * loop pass, so a replica that was stalled (SIGSTOP, a long GC pause) does not act on a lease it may have lost;
 * {@link LeaderElector.checkLeading} steps down at once, before a write. Releases the Lease on stop so that a
 * standby takes over at once instead of after `leaseDurationSeconds`.
 */
export class LeaderElector {
  private readonly o: LeaderElectorOptions;
  private readonly leaseDurationSeconds: number;
  private readonly renewDeadlineMs: number;
  private leading = false;
  /** Monotonic ms until which the last successful acquire or renewal lets this replica act as leader. */
  private validUntilMs = Number.NEGATIVE_INFINITY;
  private readonly listeners = new Set<(isLeader: boolean) => void>();
  private observed: { record: string; atMs: number } | undefined;
  /** Who held the Lease at the last look (for readiness of standby replicas). */
  observedHolder: string | undefined;

  /** @throws {ConfigError} when the renew deadline is not shorter than the lease, or the retry period not shorter than the deadline. */
  constructor(options: LeaderElectorOptions) {
    this.o = options;
    this.leaseDurationSeconds = options.leaseDurationSeconds ?? 15;
    this.renewDeadlineMs = options.renewDeadlineMs ?? Math.min(10_000, (this.leaseDurationSeconds * 1000 * 2) / 3);
    const retryMs = options.retryMs ?? 2_000;
    if (this.renewDeadlineMs >= this.leaseDurationSeconds * 1000 || retryMs >= this.renewDeadlineMs) {
      throw new ConfigError(
        `leader election: need retry (${retryMs} ms) < renew deadline (${this.renewDeadlineMs} ms) < lease duration ` +
          `(${this.leaseDurationSeconds} s); shorten the retry period or the renew deadline`,
      );
    }
  }

  /** True while this replica holds the Lease and its last renewal is within the renew deadline. */
  get isLeader(): boolean {
    return this.leading && this.o.clock.monotonicMs() < this.validUntilMs;
  }

  /**
   * Whether this replica may act as leader now; a leader whose renew deadline has passed steps down here (its
   * listeners run before this returns). Call it right before every write.
   */
  checkLeading(): boolean {
    if (this.isLeader) return true;
    if (this.leading) this.stepDown('renew deadline passed without a successful renewal');
    return false;
  }

  /** Calls `fn` on every change of leadership. */
  onChange(fn: (isLeader: boolean) => void): void {
    this.listeners.add(fn);
  }

  private path(name = this.o.name) {
    return `/apis/coordination.k8s.io/v1/namespaces/${this.o.namespace}/leases${name ? `/${name}` : ''}`;
  }

  private set(isLeader: boolean, why?: string) {
    if (isLeader === this.leading) return;
    this.leading = isLeader;
    this.o.log.info(
      { identity: this.o.identity, lease: `${this.o.namespace}/${this.o.name}`, isLeader, ...(why ? { why } : {}) },
      isLeader ? 'acquired leadership' : 'lost leadership',
    );
    for (const fn of this.listeners) fn(isLeader);
  }

  private stepDown(why: string) {
    this.validUntilMs = Number.NEGATIVE_INFINITY;
    this.set(false, why);
  }

  /**
   * Tries once to acquire or renew; returns whether this replica leads afterwards. A failed renewal keeps a leader
   * leading until its renew deadline; seeing another holder or losing a write race ends it at once.
   */
  async tryAcquireOrRenew(signal?: AbortSignal): Promise<boolean> {
    const startedMs = this.o.clock.monotonicMs();
    if (this.leading && startedMs >= this.validUntilMs)
      this.stepDown('renew deadline passed without a successful renewal');
    // A hung request must not hold a leader past its deadline (nor a candidate longer than one).
    const budgetMs = this.leading ? this.validUntilMs - startedMs : this.renewDeadlineMs;
    const attempt = AbortSignal.any([
      AbortSignal.timeout(Math.max(1, Math.ceil(budgetMs))),
      ...(signal ? [signal] : []),
    ]);
    try {
      if (!(await this.acquireOrRenew(attempt))) {
        this.stepDown('another replica holds the lease');
        return false;
      }
      // As client-go: validity counts from when the renewal was sent, never from when its answer came.
      this.validUntilMs = startedMs + this.renewDeadlineMs;
      this.observedHolder = this.o.identity;
      if (this.o.clock.monotonicMs() >= this.validUntilMs) {
        this.stepDown('renewal succeeded only after the renew deadline');
        return false;
      }
      this.set(true);
      return true;
    } catch (err) {
      if (statusOfError(err) === 409) {
        // Another candidate won the race. Note the winner now, so this standby reports ready at once.
        const lease = await this.o.kube.get<Lease>(this.path(), signal).catch(() => undefined);
        this.observedHolder = lease?.spec?.holderIdentity ?? undefined;
        this.stepDown('another replica won the lease');
        return false;
      }
      this.o.log.warn({ err: (err as Error).message, isLeader: this.isLeader }, 'lease renewal failed');
      // A leader's budget ends at its renew deadline, so a renewal its budget aborted missed that deadline, even when
      // the clock does not read it yet: Node starts a timer from the event loop's cached time, which lags the clock
      // under load (seen in CI: aborted at the deadline, still leading).
      const deadlineAborted = attempt.aborted && !signal?.aborted;
      if (this.leading && (deadlineAborted || this.o.clock.monotonicMs() >= this.validUntilMs))
        this.stepDown('renew deadline passed without a successful renewal');
      return this.isLeader;
    }
  }

  // One GET and, when the lease is free, expired or ours, one write; false when another holder's lease is valid.
  private async acquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const { kube, clock, identity } = this.o;
    const duration = this.leaseDurationSeconds;
    const now = clock
      .now()
      .toISOString()
      .replace(/\.(\d{3})Z$/, '.$1000Z');
    const lease = await kube.get<Lease>(this.path(), signal);
    if (!lease) {
      await kube.call(
        'POST',
        this.path(''),
        {
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
        },
        undefined,
        signal,
      );
      return true;
    }
    const holder = lease.spec?.holderIdentity ?? undefined;
    this.observedHolder = holder;
    // As client-go: expiry counts from when *we* saw the record change, not from the holder's renewTime, so clock
    // skew between replicas cannot make a live leader look expired.
    const record = `${holder}/${lease.spec?.renewTime}`;
    if (record !== this.observed?.record) this.observed = { record, atMs: clock.monotonicMs() };
    const expired =
      !holder || this.observed.atMs + (lease.spec?.leaseDurationSeconds ?? duration) * 1000 < clock.monotonicMs();
    if (holder !== identity && !expired) return false;
    await kube.call(
      'PUT',
      this.path(),
      {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: this.o.name, namespace: this.o.namespace, resourceVersion: lease.metadata.resourceVersion },
        spec: {
          holderIdentity: identity,
          leaseDurationSeconds: duration,
          acquireTime: holder === identity ? lease.spec?.acquireTime : now,
          renewTime: now,
          leaseTransitions: (lease.spec?.leaseTransitions ?? 0) + (holder === identity ? 0 : 1),
        },
      },
      undefined,
      signal,
    );
    return true;
  }

  /** Runs the election until `signal` aborts, then releases the Lease if held. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.tryAcquireOrRenew(signal);
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
    this.stepDown('stopping');
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
