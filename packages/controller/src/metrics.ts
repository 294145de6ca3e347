/** The controller's Prometheus metrics, rendered in the text exposition format by {@link Metrics.render}. */
export class Metrics {
  private syncCount = { success: 0, failure: 0 };
  private syncSecondsSum = 0;
  private lastSyncSeconds = 0;
  private objectsApplied = 0;
  private objectsPruned = 0;
  private errors = new Map<string, number>();
  private inventory = 0;
  private leader = 0;
  private webhookRequests = new Map<string, number>();

  /** Records one finished sync. */
  observeSync(durationSeconds: number, ok: boolean, appliedCount: number, prunedCount: number): void {
    this.syncCount[ok ? 'success' : 'failure']++;
    this.syncSecondsSum += durationSeconds;
    this.lastSyncSeconds = durationSeconds;
    this.objectsApplied += appliedCount;
    this.objectsPruned += prunedCount;
  }

  /** Counts an error by condition reason. */
  observeError(reason: string): void {
    this.errors.set(reason, (this.errors.get(reason) ?? 0) + 1);
  }

  /** Sets the inventory size. */
  setInventory(count: number): void {
    this.inventory = count;
  }

  /** Sets whether this replica leads. */
  setLeader(isLeader: boolean): void {
    this.leader = isLeader ? 1 : 0;
  }

  /** Counts a webhook call by outcome (`accepted`, `unauthorized`, ...). */
  observeWebhook(outcome: string): void {
    this.webhookRequests.set(outcome, (this.webhookRequests.get(outcome) ?? 0) + 1);
  }

  /** The metrics as Prometheus text (version 0.0.4). */
  render(): string {
    const l: string[] = [];
    const metric = (name: string, type: string, help: string, samples: [string, number][]) => {
      l.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      for (const [labels, v] of samples) l.push(`${name}${labels} ${v}`);
    };
    metric('baton_controller_sync_duration_seconds', 'summary', 'Duration of syncs.', [
      ['_sum', this.syncSecondsSum],
      ['_count', this.syncCount.success + this.syncCount.failure],
    ]);
    // The summary's _sum/_count suffixes belong on the name, not in labels.
    const last = l.length;
    l[last - 2] = `baton_controller_sync_duration_seconds_sum ${this.syncSecondsSum}`;
    l[last - 1] = `baton_controller_sync_duration_seconds_count ${this.syncCount.success + this.syncCount.failure}`;
    metric('baton_controller_last_sync_duration_seconds', 'gauge', 'Duration of the last sync.', [
      ['', this.lastSyncSeconds],
    ]);
    metric('baton_controller_syncs_total', 'counter', 'Finished syncs by result.', [
      ['{result="success"}', this.syncCount.success],
      ['{result="failure"}', this.syncCount.failure],
    ]);
    metric('baton_controller_objects_applied_total', 'counter', 'Objects sent to the apiserver by server-side apply.', [
      ['', this.objectsApplied],
    ]);
    metric('baton_controller_objects_pruned_total', 'counter', 'Objects deleted because they left Git.', [
      ['', this.objectsPruned],
    ]);
    metric(
      'baton_controller_sync_errors_total',
      'counter',
      'Failed syncs by reason.',
      [...this.errors].map(([r, v]) => [`{reason="${r}"}`, v]),
    );
    metric('baton_controller_inventory_objects', 'gauge', 'Objects in the inventory.', [['', this.inventory]]);
    metric('baton_controller_leader', 'gauge', '1 when this replica holds the Lease.', [['', this.leader]]);
    metric(
      'baton_controller_webhook_requests_total',
      'counter',
      'Webhook calls by outcome.',
      [...this.webhookRequests].map(([r, v]) => [`{outcome="${r}"}`, v]),
    );
    return `${l.join('\n')}\n`;
  }
}
