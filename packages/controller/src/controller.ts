import { setMaxListeners } from 'node:events';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { type Clock, systemClock } from '@baton/core/clock';
import { isBatonError } from '@baton/errors';
import type { Logger } from 'pino';
import { Applier, type ApplyResult, type ProtectedIdentity, SyncError } from './applier.js';
import { condition as cond, kubeTime, mergeConditions } from './conditions.js';
import { EventRecorder } from './events.js';
import { type FetchedRevision, fetchRevision, GitFailure, GitFetchError } from './git-source.js';
import {
  type Condition,
  GITSYNC_API_VERSION,
  type GitSync,
  type GitSyncSpec,
  type GitSyncStatus,
  parseGitSyncSpec,
} from './gitsync.js';
import { listenHttp } from './http-routes.js';
import type { KubeClient } from './kube-client.js';
import { LeaderElector } from './leader-election.js';
import { fingerprint } from './logger.js';
import { Metrics } from './metrics.js';
import { renderDirectory } from './render.js';
import { readGitAuth, readWebhookKey } from './secrets.js';

/** Options of {@link startController}. Every collaborator is swappable. */
export interface ControllerOptions {
  /** Client authenticated as the controller's own ServiceAccount. */
  readonly kube: KubeClient;
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

/** What one sync produced, also returned by {@link RunningController.syncNow}. */
export interface SyncOutcome {
  readonly syncId: string;
  readonly isOk: boolean;
  readonly revision?: string;
  readonly reason: string;
  readonly message: string;
  readonly durationSeconds: number;
  readonly appliedCount: number;
}

/** What one sync has learned so far, for the step that records its result. */
interface SyncRun {
  readonly syncId: string;
  readonly startedMs: number;
  log: Logger;
  gs?: GitSync;
  spec?: GitSyncSpec;
  revision?: string;
}

/** How a sync ended, before it becomes a {@link SyncOutcome}. */
type SyncResult =
  | { readonly kind: 'suspended' }
  | { readonly kind: 'applied'; readonly message: string; readonly appliedCount: number }
  | { readonly kind: 'failed'; readonly reason: string; readonly message: string }
  | { readonly kind: 'aborted'; readonly message: string };

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
  private readonly kube: KubeClient;
  private readonly metrics = new Metrics();
  private readonly stopCtl = new AbortController();
  private server: Server | undefined;
  private url = '';
  private readonly events: EventRecorder;
  private syncCounter = 0;
  private hasSynced = false;
  private pending = false;
  private wake: (() => void) | undefined;
  private failures = 0;
  private webhookKey: string | undefined;
  private lastSync: SyncOutcome | undefined;
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
    this.events = new EventRecorder({
      kube: this.kube,
      log: this.log,
      clock: this.clock,
      namespace: o.namespace,
      gitSyncName: this.name,
      identity: o.identity,
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
        return self.lastSync;
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
        webhookKey: () => this.resolveWebhookKey(),
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
        const outcome = await this.syncOnce(this.syncAbort.signal);
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

  /** One sync: reconcile, or record why not; the outcome is built once, in {@link finishSync}. */
  private async syncOnce(signal: AbortSignal): Promise<SyncOutcome & { intervalMs?: number }> {
    const syncId = `${this.o.identity}-${++this.syncCounter}`;
    const run: SyncRun = { syncId, log: this.log.child({ syncId }), startedMs: this.clock.monotonicMs() };
    let result: SyncResult;
    try {
      result = await this.reconcile(run, signal);
    } catch (err) {
      result = signal.aborted
        ? { kind: 'aborted', message: String(signal.reason) }
        : await this.recordFailure(run, err);
    }
    return this.finishSync(run, result);
  }

  private async reconcile(run: SyncRun, signal: AbortSignal): Promise<SyncResult> {
    const { gs, spec } = await this.readGitSync(run, signal);
    if (spec.suspend) return { kind: 'suspended' };
    const fetched = await this.fetchSource(run, spec, signal);
    const revision = fetched.revision;
    // An earlier failed attempt at this revision must not swallow its Applied event.
    const isNewlyApplied = gs.status?.lastAppliedRevision !== revision;
    if (gs.status?.lastAttemptedRevision !== revision)
      await this.writeStatus(gs, { lastAttemptedRevision: revision }, [
        cond('Reconciling', 'True', 'Progressing', `applying revision ${revision}`),
      ]);
    const objects = await renderDirectory(fetched.dir, spec.path).catch((err: unknown) => {
      throw new SyncError('RenderFailed', `revision ${revision.slice(0, 12)}: ${(err as Error).message}`, {
        cause: err,
      });
    });
    const applied = await this.applier.apply(objects, {
      previousInventory: gs.status?.inventory ?? [],
      prune: spec.prune,
      protect: this.o.protect ?? {
        namespace: this.o.namespace,
        serviceAccount: 'baton-controller',
        deployment: 'baton-controller',
      },
      signal,
    });
    return this.recordSuccess(run, gs, revision, applied, isNewlyApplied);
  }

  private async readGitSync(run: SyncRun, signal: AbortSignal): Promise<{ gs: GitSync; spec: GitSyncSpec }> {
    const where = `GitSync ${this.o.namespace}/${this.name}`;
    const gs = await this.kube.get<GitSync>(this.gitSyncPath(), signal);
    if (!gs)
      throw new SyncError(
        'GitSyncNotFound',
        `${where} does not exist; apply it (bootstrap-manifests/baton-controller/gitsync.yaml)`,
        { isStalled: true },
      );
    run.gs = gs;
    try {
      run.spec = parseGitSyncSpec(gs.spec, where);
    } catch (err) {
      throw new SyncError('InvalidSpec', (err as Error).message, { isStalled: true });
    }
    return { gs, spec: run.spec };
  }

  private async fetchSource(run: SyncRun, spec: GitSyncSpec, signal: AbortSignal): Promise<FetchedRevision> {
    const auth = spec.secretRef
      ? await readGitAuth(this.kube, this.o.namespace, spec.secretRef.name, signal)
      : undefined;
    if (spec.webhookSecretRef)
      this.webhookKey = await readWebhookKey(this.kube, this.o.namespace, spec.webhookSecretRef.name, signal);
    run.log.debug(
      { credential: auth ? fingerprint('bearerToken' in auth ? auth.bearerToken : auth.password) : undefined },
      'fetching',
    );
    const fetched = await fetchRevision(
      { url: spec.url, ref: spec.ref, workDir: join(this.o.workDir, 'repo'), auth, signal, timeoutMs: 60_000 },
      this.o.gitPath ?? 'git',
    );
    run.revision = fetched.revision;
    run.log = run.log.child({ revision: fetched.revision });
    return fetched;
  }

  private async recordSuccess(
    run: SyncRun,
    gs: GitSync,
    revision: string,
    result: ApplyResult,
    isNewlyApplied: boolean,
  ): Promise<SyncResult> {
    const durationSeconds = this.elapsedSeconds(run);
    const refused = result.pruneRefused.length
      ? `; refused to prune ${result.pruneRefused.length} protected object(s): ${result.pruneRefused.slice(0, 3).join(', ')}`
      : '';
    const message = `applied revision ${revision}: ${result.inventory.length} objects (${result.appliedCount} sent, ${result.pruned.length} pruned, ${result.drifted.length} drift reverted)${refused}`;
    await this.writeStatus(
      gs,
      {
        lastAppliedRevision: revision,
        lastAttemptedRevision: revision,
        inventory: result.inventory,
        inventoryCount: result.inventory.length,
        driftedObjects: result.drifted,
        pruneRefused: result.pruneRefused,
        lastError: '',
      },
      [
        cond('Ready', 'True', 'Succeeded', message),
        cond('Reconciling', 'False', 'Succeeded', message),
        cond('Stalled', 'False', 'Succeeded', 'the last sync succeeded'),
      ],
    );
    if (isNewlyApplied || result.pruned.length || result.drifted.length)
      await this.events.record(gs, 'Normal', 'Applied', message);
    if (result.pruneRefused.length)
      await this.events.record(
        gs,
        'Warning',
        'PruneRefused',
        `refused to prune ${result.pruneRefused.join(', ')}: they are the controller's own identity or RBAC, or are annotated baton.dev/prune=disabled; delete them by hand if intended`,
      );
    if (result.drifted.length)
      run.log.warn({ drifted: result.drifted.slice(0, 20), driftCount: result.drifted.length }, 'drift reverted');
    this.metrics.observeSync(durationSeconds, true, result.appliedCount, result.pruned.length);
    this.metrics.setInventory(result.inventory.length);
    run.log.info(
      {
        durationMs: Math.round(durationSeconds * 1000),
        objects: result.inventory.length,
        applied: result.appliedCount,
        pruned: result.pruned.length,
      },
      'sync succeeded',
    );
    this.hasSynced = true;
    return { kind: 'applied', message, appliedCount: result.appliedCount };
  }

  private async recordFailure(run: SyncRun, err: unknown): Promise<SyncResult> {
    const { reason, isStalled } = classify(err);
    const message = isBatonError(err) ? err.message : `unexpected error: ${(err as Error).message}`;
    run.log.error({ reason, isStalled, err: message }, 'sync failed');
    this.metrics.observeSync(this.elapsedSeconds(run), false, 0, 0);
    this.metrics.observeError(reason);
    if (run.gs) {
      try {
        await this.writeStatus(
          run.gs,
          { ...(run.revision ? { lastAttemptedRevision: run.revision } : {}), lastError: message },
          [
            cond('Ready', 'False', reason, message),
            cond('Reconciling', 'False', reason, 'the last sync failed; retrying with backoff'),
            cond(
              'Stalled',
              isStalled ? 'True' : 'False',
              isStalled ? reason : 'Retrying',
              isStalled ? message : 'the last failure may be transient; retrying',
            ),
          ],
        );
        await this.events.record(run.gs, 'Warning', reason, message);
      } catch (statusErr) {
        run.log.error({ err: (statusErr as Error).message }, 'status update failed');
      }
    }
    return { kind: 'failed', reason, message };
  }

  // The one place a sync's outcome is built. An aborted sync (lost leadership, shutdown) is not a result: it
  // leaves lastSync and the poll interval as they were.
  private finishSync(run: SyncRun, result: SyncResult): SyncOutcome & { intervalMs?: number } {
    const durationSeconds = result.kind === 'suspended' ? 0 : this.elapsedSeconds(run);
    const base = { syncId: run.syncId, durationSeconds, appliedCount: 0 };
    if (result.kind === 'aborted') {
      run.log.info({ why: result.message }, 'sync aborted');
      return { ...base, isOk: false, reason: 'Aborted', message: result.message };
    }
    const outcome: SyncOutcome =
      result.kind === 'suspended'
        ? { ...base, isOk: true, reason: 'Suspended', message: 'spec.suspend is true; nothing is applied or pruned' }
        : result.kind === 'applied'
          ? {
              ...base,
              isOk: true,
              revision: run.revision!,
              reason: 'Succeeded',
              message: result.message,
              appliedCount: result.appliedCount,
            }
          : {
              ...base,
              isOk: false,
              ...(run.revision ? { revision: run.revision } : {}),
              reason: result.reason,
              message: result.message,
            };
    this.lastSync = outcome;
    return { ...outcome, ...(run.spec ? { intervalMs: run.spec.intervalSeconds * 1000 } : {}) };
  }

  private elapsedSeconds(run: SyncRun): number {
    return (this.clock.monotonicMs() - run.startedMs) / 1000;
  }

  private async writeStatus(gs: GitSync, patch: Partial<GitSyncStatus>, conditions: Condition[]) {
    const generation = gs.metadata.generation;
    const now = kubeTime(this.clock.now());
    const status: GitSyncStatus = {
      ...(gs.status ?? {}),
      ...patch,
      conditions: mergeConditions(gs.status?.conditions ?? [], conditions, { now, generation }),
      lastSyncTime: now,
      ...(generation ? { observedGeneration: generation } : {}),
    };
    const updated = await this.kube.call<GitSync>(
      'PATCH',
      this.gitSyncPath('/status'),
      { status },
      'application/merge-patch+json',
    );
    gs.status = updated.status ?? status;
    if (updated.metadata.resourceVersion) gs.metadata.resourceVersion = updated.metadata.resourceVersion;
  }

  /** The webhook key read by the last sync, or read now when no sync has read it yet (a fresh standby). */
  private async resolveWebhookKey(): Promise<string | undefined> {
    if (this.webhookKey) return this.webhookKey;
    try {
      const gs = await this.kube.get<GitSync>(this.gitSyncPath());
      const ref = gs ? parseGitSyncSpec(gs.spec, 'GitSync').webhookSecretRef : undefined;
      if (ref) this.webhookKey = await readWebhookKey(this.kube, this.o.namespace, ref.name);
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'webhook secret unavailable');
    }
    return this.webhookKey;
  }

  private isReady(): boolean {
    if (this.hasSynced && this.elector.isLeader) return true;
    // A standby is ready when it sees another replica holding the Lease.
    return (
      !this.elector.isLeader &&
      this.elector.observedHolder !== undefined &&
      this.elector.observedHolder !== this.o.identity
    );
  }
}

function classify(err: unknown): { reason: string; isStalled: boolean } {
  if (err instanceof SyncError) return { reason: err.reason, isStalled: err.isStalled };
  if (err instanceof GitFetchError) return { reason: err.reason, isStalled: err.reason !== GitFailure.unreachable };
  return { reason: 'SyncFailed', isStalled: false };
}
