import { setMaxListeners } from 'node:events';
import type { Server } from 'node:http';
import { type Clock, systemClock } from '@baton/core/clock';
import type { KubeRestClient } from '@baton/kube/rest';
import type { Logger } from 'pino';
import { Applier, type ProtectedIdentity, SyncError } from './applier.js';
import { EventRecorder } from './events.js';
import { GITSYNC_API_VERSION } from './gitsync.js';
import { listenHttp } from './http-routes.js';
import { LeaderElector } from './leader-election.js';
import { Metrics } from './metrics.js';
import { type SyncOutcome, SyncPass } from './sync-pass.js';

/** Options of {@link startController}. Every collaborator is swappable. */
export interface ControllerOptions {
  /** Client authenticated as the controller's own ServiceAccount. */
  readonly kube: KubeRestClient;
  /** JSON logger (`createControllerLogger()`, or `createLogger()` of `@baton/core` in tests). */
  readonly log: Logger;
  /** @default systemClock of `@baton/core/clock` */
  readonly clock?: Clock;
  /** Namespace of the GitSync, the Lease, and the Secrets it references. */
  readonly namespace: string;
  /** Name of the GitSync to reconcile. @default 'baton-controller' */
  readonly gitSyncName?: string;
  /** This replica's identity in the Lease (the pod name). */
  readonly identity: string;
  /** Writable folder for the Git checkout. */
  readonly workDir: string;
  /** Port of the health, metrics and webhook server; 0 picks a free one. @default 8080 */
  readonly port?: number;
  /** Address to listen on. @default '0.0.0.0' */
  readonly host?: string;
  /** Lease name. @default 'baton-controller' */
  readonly leaseName?: string;
  /** Lease validity. @default 15 */
  readonly leaseDurationSeconds?: number;
  /** Lease renew / retry period. @default 2_000 */
  readonly leaseRetryMs?: number;
  /**
   * How long the leader acts on its last successful Lease renewal; past it, it stops syncing and writes nothing.
   * @default 10_000, or two thirds of a shorter lease duration
   */
  readonly leaseRenewDeadlineMs?: number;
  /** Objects never pruned. @default { namespace, serviceAccount: 'baton-controller', deployment: 'baton-controller' } */
  readonly protect?: ProtectedIdentity;
  /** git executable. @default 'git' */
  readonly gitPath?: string;
  /** First retry delay after a failed sync, doubled up to the interval. @default 2_000 */
  readonly retryBaseMs?: number;
  /** How long SIGTERM waits for a running sync. @default 20_000 */
  readonly shutdownGraceMs?: number;
}

/** A started controller. */
export interface RunningController {
  /** `http://host:port` of the health / metrics / webhook server. */
  readonly url: string;
  /** True while this replica holds the Lease. */
  readonly isLeader: boolean;
  /** The last finished sync. */
  readonly lastSync: SyncOutcome | undefined;
  /** Prometheus metrics. */
  readonly metrics: Metrics;
  /** Requests a sync as soon as possible (what the webhook calls). */
  trigger(): void;
  /** Stops gracefully: finishes the running sync, releases the Lease, closes the server. Idempotent. */
  stop(): Promise<void>;
  /** Resolves when the controller has stopped. */
  readonly done: Promise<void>;
}

/**
 * Starts the controller: leader election, the sync loop (poll at `spec.intervalSeconds`, or at once
 * on a webhook call), and the HTTP server with `/healthz`, `/readyz`, `/metrics` and `POST /webhook`.
 * @throws when the HTTP port cannot be bound.
 */
export async function startController(options: ControllerOptions): Promise<RunningController> {
  const c = new Controller(options);
  await c.listen();
  c.start();
  return c.handle();
}

class Controller {
  private readonly o: ControllerOptions;
  private readonly clock: Clock;
  private readonly name: string;
  private readonly log: Logger;
  private readonly applier: Applier;
  private readonly elector: LeaderElector;
  /** `o.kube` with every write fenced by leadership; the elector alone writes through `o.kube`. */
  private readonly kube: KubeRestClient;
  private readonly metrics = new Metrics();
  private readonly stopCtl = new AbortController();
  private server: Server | undefined;
  private url = '';
  private pending = false;
  private wake: (() => void) | undefined;
  private failures = 0;
  private readonly pass: SyncPass;
  private syncAbort: AbortController | undefined;
  private loop: Promise<void> = Promise.resolve();
  private electing: Promise<void> = Promise.resolve();
  private stopping: Promise<void> | undefined;

  constructor(o: ControllerOptions) {
    this.o = o;
    this.clock = o.clock ?? systemClock;
    this.name = o.gitSyncName ?? 'baton-controller';
    this.log = o.log.child({ gitSync: `${o.namespace}/${this.name}`, identity: o.identity });
    // Checked as each write is sent: a replica that was stalled past its renew deadline steps down before it writes.
    this.kube = o.kube.guardWrites(() => {
      if (!this.elector.checkLeading())
        throw new SyncError(
          'LostLeadership',
          `${o.identity} is not the leader (no Lease renewal within the renew deadline); nothing was written`,
        );
    });
    this.applier = new Applier({ kube: this.kube, log: this.log, clock: this.clock });
    const events = new EventRecorder({
      kube: this.kube,
      log: this.log,
      clock: this.clock,
      namespace: o.namespace,
      gitSyncName: this.name,
      identity: o.identity,
    });
    this.pass = new SyncPass({
      kube: this.kube,
      log: this.log,
      clock: this.clock,
      applier: this.applier,
      events,
      metrics: this.metrics,
      namespace: o.namespace,
      name: this.name,
      identity: o.identity,
      workDir: o.workDir,
      gitPath: o.gitPath,
      protect: o.protect,
      path: (sub) => this.gitSyncPath(sub),
    });
    this.elector = new LeaderElector({
      kube: o.kube,
      log: this.log,
      clock: this.clock,
      namespace: o.namespace,
      name: o.leaseName ?? 'baton-controller',
      identity: o.identity,
      ...(o.leaseDurationSeconds ? { leaseDurationSeconds: o.leaseDurationSeconds } : {}),
      ...(o.leaseRetryMs ? { retryMs: o.leaseRetryMs } : {}),
      ...(o.leaseRenewDeadlineMs ? { renewDeadlineMs: o.leaseRenewDeadlineMs } : {}),
    });
    this.elector.onChange((isLeader) => {
      this.metrics.setLeader(isLeader);
      if (!isLeader) this.syncAbort?.abort(new Error('lost leadership'));
      this.wakeUp();
    });
  }

  handle(): RunningController {
    const self = this;
    return {
      url: this.url,
      get isLeader() {
        return self.elector.isLeader;
      },
      get lastSync() {
        return self.pass.lastSync;
      },
      metrics: this.metrics,
      trigger: () => this.trigger(),
      stop: () => this.stop(),
      done: this.stopCtl.signal.aborted
        ? Promise.resolve()
        : new Promise((r) => this.stopCtl.signal.addEventListener('abort', () => r(undefined))).then(
            () => this.stopping,
          ),
    };
  }

  async listen() {
    const listening = await listenHttp(
      {
        log: this.log,
        metrics: this.metrics,
        isReady: () => this.isReady(),
        isLeader: () => this.elector.isLeader,
        webhookKey: () => this.pass.resolveWebhookKey(),
        trigger: () => this.trigger(),
      },
      this.o.port ?? 8080,
      this.o.host ?? '0.0.0.0',
    );
    this.server = listening.server;
    this.url = listening.url;
  }

  start() {
    this.electing = this.elector.run(this.stopCtl.signal);
    this.loop = this.runLoop();
  }

  private trigger() {
    this.pending = true;
    this.wakeUp();
  }

  private wakeUp() {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private async runLoop() {
    let interval = 60_000;
    while (!this.stopCtl.signal.aborted) {
      let waitMs = 1_000;
      if (this.elector.isLeader) {
        this.pending = false;
        this.syncAbort = new AbortController();
        // One listener per in-flight request (up to the apply concurrency), not a leak.
        setMaxListeners(64, this.syncAbort.signal);
        const outcome = await this.pass.run(this.syncAbort.signal);
        interval = outcome.intervalMs ?? interval;
        this.failures = outcome.isOk ? 0 : this.failures + 1;
        // Failed syncs back off exponentially up to the interval: a broken source is never a hot loop.
        waitMs = outcome.isOk
          ? interval
          : Math.min(interval, (this.o.retryBaseMs ?? 2_000) * 2 ** Math.min(this.failures - 1, 10));
        if (this.pending) continue;
      }
      if (this.stopCtl.signal.aborted) break;
      const waitCtl = new AbortController();
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        this.clock.sleep(waitMs, AbortSignal.any([waitCtl.signal, this.stopCtl.signal])).then(resolve, resolve);
      });
      waitCtl.abort();
    }
  }

  private async stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.log.info('stopping');
      const grace = this.o.shutdownGraceMs ?? 20_000;
      const timer = setTimeout(() => this.syncAbort?.abort(new Error('shutdown grace period over')), grace);
      this.stopCtl.abort();
      this.wakeUp();
      await this.loop;
      clearTimeout(timer);
      await this.electing;
      await new Promise<void>((resolve) => {
        if (!this.server) return resolve();
        this.server.close(() => resolve());
        this.server.closeAllConnections();
      });
      this.o.kube.close();
      this.log.info('stopped');
    })();
    return this.stopping;
  }

  private gitSyncPath(sub = '') {
    return `/apis/${GITSYNC_API_VERSION}/namespaces/${this.o.namespace}/gitsyncs/${this.name}${sub}`;
  }

  private isReady(): boolean {
    if (this.pass.hasSynced && this.elector.isLeader) return true;
    // A standby is ready when it sees another replica holding the Lease.
    return (
      !this.elector.isLeader &&
      this.elector.observedHolder !== undefined &&
      this.elector.observedHolder !== this.o.identity
    );
  }
}
