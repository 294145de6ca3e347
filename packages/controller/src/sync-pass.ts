// One sync of the GitSync: read it, fetch the revision, render and apply, and record the outcome (status, events,
// metrics, log). The loop that decides when to sync, and whether this replica may, is ./controller.ts.
import { join } from 'node:path';
import type { Clock } from '@baton/core/clock';
import { isBatonError } from '@baton/errors';
import type { KubeRestClient } from '@baton/kube/rest';
import type { Logger } from 'pino';
import { type Applier, type ApplyResult, type ProtectedIdentity, SyncError } from './applier.js';
import type { EventRecorder } from './events.js';
import { type FetchedRevision, fetchRevision, GitFailure, GitFetchError } from './git-source.js';
import { type GitSync, type GitSyncSpec, parseGitSyncSpec } from './gitsync.js';
import { fingerprint } from './logger.js';
import type { Metrics } from './metrics.js';
import { renderDirectory } from './render.js';
import { readGitAuth, readWebhookKey } from './secrets.js';
import { SyncStatusWriter } from './sync-status.js';

/** What one sync produced, also what the controller reports as its last sync. */
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

/** The syncs of one controller replica, one at a time: what the last one found, and the webhook key it read. */
export class SyncPass {
  private syncCounter = 0;
  private webhookKey: string | undefined;
  /** Whether a sync has applied a revision since this replica started. */
  hasSynced = false;
  /** The last finished sync (an aborted one leaves it as it was). */
  lastSync: SyncOutcome | undefined;
  /** The GitSync's status and Events: the pass decides, this writes. */
  private readonly status: SyncStatusWriter;

  constructor(
    private readonly o: {
      readonly kube: KubeRestClient;
      readonly log: Logger;
      readonly clock: Clock;
      readonly applier: Applier;
      /** Where the status writer records the sync's Events. */
      readonly events: EventRecorder;
      readonly metrics: Metrics;
      readonly namespace: string;
      /** The GitSync's name. */
      readonly name: string;
      readonly identity: string;
      readonly workDir: string;
      readonly gitPath?: string | undefined;
      readonly protect?: ProtectedIdentity | undefined;
      /** The GitSync's API path. */
      readonly path: (sub?: string) => string;
    },
  ) {
    this.status = new SyncStatusWriter({ kube: o.kube, events: o.events, clock: o.clock, path: o.path });
  }

  /** One sync: reconcile, or record why not; the outcome is built once, in {@link finishSync}. */
  async run(signal: AbortSignal): Promise<SyncOutcome & { intervalMs?: number }> {
    const syncId = `${this.o.identity}-${++this.syncCounter}`;
    const run: SyncRun = { syncId, log: this.o.log.child({ syncId }), startedMs: this.o.clock.monotonicMs() };
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
    await this.status.attempting(gs, revision);
    const objects = await renderDirectory(fetched.dir, spec.path).catch((err: unknown) => {
      throw new SyncError('RenderFailed', `revision ${revision.slice(0, 12)}: ${(err as Error).message}`, {
        cause: err,
      });
    });
    const applied = await this.o.applier.apply(objects, {
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
    const where = `GitSync ${this.o.namespace}/${this.o.name}`;
    const gs = await this.o.kube.get<GitSync>(this.o.path(), signal);
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
      ? await readGitAuth(this.o.kube, this.o.namespace, spec.secretRef.name, signal)
      : undefined;
    if (spec.webhookSecretRef)
      this.webhookKey = await readWebhookKey(this.o.kube, this.o.namespace, spec.webhookSecretRef.name, signal);
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
    await this.status.succeeded(gs, revision, result, message, isNewlyApplied);
    if (result.drifted.length)
      run.log.warn({ drifted: result.drifted.slice(0, 20), driftCount: result.drifted.length }, 'drift reverted');
    this.o.metrics.observeSync(durationSeconds, true, result.appliedCount, result.pruned.length);
    this.o.metrics.setInventory(result.inventory.length);
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
    this.o.metrics.observeSync(this.elapsedSeconds(run), false, 0, 0);
    this.o.metrics.observeError(reason);
    if (run.gs) {
      try {
        await this.status.failed(run.gs, {
          ...(run.revision ? { revision: run.revision } : {}),
          reason,
          isStalled,
          message,
        });
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
    return (this.o.clock.monotonicMs() - run.startedMs) / 1000;
  }

  /** The webhook key read by the last sync, or read now when no sync has read it yet (a fresh standby). */
  async resolveWebhookKey(): Promise<string | undefined> {
    if (this.webhookKey) return this.webhookKey;
    try {
      const gs = await this.o.kube.get<GitSync>(this.o.path());
      const ref = gs ? parseGitSyncSpec(gs.spec, 'GitSync').webhookSecretRef : undefined;
      if (ref) this.webhookKey = await readWebhookKey(this.o.kube, this.o.namespace, ref.name);
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message }, 'webhook secret unavailable');
    }
    return this.webhookKey;
  }
}

function classify(err: unknown): { reason: string; isStalled: boolean } {
  if (err instanceof SyncError) return { reason: err.reason, isStalled: err.isStalled };
  if (err instanceof GitFetchError) return { reason: err.reason, isStalled: err.reason !== GitFailure.unreachable };
  return { reason: 'SyncFailed', isStalled: false };
}
