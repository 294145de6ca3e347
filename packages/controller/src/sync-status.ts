// What a sync tells the cluster: the GitSync's status (revisions, inventory, conditions) and its Events. The loop
// decides; this writes, so the status a handoff reads is shaped in one place.
import type { Clock } from '@baton/core/clock';
import type { KubeRestClient } from '@baton/kube/rest';
import type { ApplyResult } from './applier.js';
import { condition as cond, kubeTime, mergeConditions } from './conditions.js';
import type { EventRecorder } from './events.js';
import type { Condition, GitSync, GitSyncStatus } from './gitsync.js';

/** Writes one GitSync's status subresource and records its Events. */
export class SyncStatusWriter {
  constructor(
    private readonly o: {
      readonly kube: KubeRestClient;
      readonly events: EventRecorder;
      readonly clock: Clock;
      /** The GitSync's API path (with `/status` appended for the subresource). */
      readonly path: (sub?: string) => string;
    },
  ) {}

  /** A revision the last sync did not attempt: Reconciling, with the revision recorded as attempted. */
  async attempting(gs: GitSync, revision: string): Promise<void> {
    if (gs.status?.lastAttemptedRevision === revision) return;
    await this.write(gs, { lastAttemptedRevision: revision }, [
      cond('Reconciling', 'True', 'Progressing', `applying revision ${revision}`),
    ]);
  }

  /**
   * A sync that applied `revision`: Ready, the inventory and drift, and an Applied event when the revision is new or
   * the sync pruned or reverted something; a PruneRefused warning naming what it would not prune.
   */
  async succeeded(gs: GitSync, revision: string, result: ApplyResult, message: string, isNewlyApplied: boolean) {
    await this.write(
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
      await this.o.events.record(gs, 'Normal', 'Applied', message);
    if (result.pruneRefused.length)
      await this.o.events.record(
        gs,
        'Warning',
        'PruneRefused',
        `refused to prune ${result.pruneRefused.join(', ')}: they are the controller's own identity or RBAC, or are annotated baton.dev/prune=disabled; delete them by hand if intended`,
      );
  }

  /** A failed sync: not Ready, Stalled when retrying cannot help, and a warning event with the reason. */
  async failed(
    gs: GitSync,
    failure: {
      readonly revision?: string;
      readonly reason: string;
      readonly isStalled: boolean;
      readonly message: string;
    },
  ): Promise<void> {
    const { revision, reason, isStalled, message } = failure;
    await this.write(gs, { ...(revision ? { lastAttemptedRevision: revision } : {}), lastError: message }, [
      cond('Ready', 'False', reason, message),
      cond('Reconciling', 'False', reason, 'the last sync failed; retrying with backoff'),
      cond(
        'Stalled',
        isStalled ? 'True' : 'False',
        isStalled ? reason : 'Retrying',
        isStalled ? message : 'the last failure may be transient; retrying',
      ),
    ]);
    await this.o.events.record(gs, 'Warning', reason, message);
  }

  /** Merges `patch` and `conditions` into the status (a merge patch), and keeps `gs` current with the result. */
  private async write(gs: GitSync, patch: Partial<GitSyncStatus>, conditions: Condition[]): Promise<void> {
    const generation = gs.metadata.generation;
    const now = kubeTime(this.o.clock.now());
    const status: GitSyncStatus = {
      ...(gs.status ?? {}),
      ...patch,
      conditions: mergeConditions(gs.status?.conditions ?? [], conditions, { now, generation }),
      lastSyncTime: now,
      ...(generation ? { observedGeneration: generation } : {}),
    };
    const updated = await this.o.kube.call<GitSync>(
      'PATCH',
      this.o.path('/status'),
      { status },
      'application/merge-patch+json',
    );
    gs.status = updated.status ?? status;
    if (updated.metadata.resourceVersion) gs.metadata.resourceVersion = updated.metadata.resourceVersion;
  }
}
