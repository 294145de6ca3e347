import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FleetRecord } from '@baton/audit';
import type { AuditAppendResult, Clock } from '@baton/core';
import type { FleetTarget } from './cluster-plans.js';
import type { FleetAudit } from './fleet-audit.js';
import type { LoadedFleet } from './fleet-file.js';
import type { ClusterResult, FleetResult } from './fleet-result.js';
import type { Shard, Wave } from './waves.js';

/** What an engine's summary of one cluster may say about its audit event. */
export interface RecordedSummary {
  readonly runId?: string;
  readonly audit?: { readonly index: number };
}

/** Options of {@link runRecordedFleet}. */
export interface RecordedFleetOptions<S extends RecordedSummary> {
  readonly fleet: LoadedFleet;
  /** Runs the waves (runFleet for the local engine, runJobFleet for the Job engine). */
  readonly execute: () => Promise<FleetResult<S>>;
  readonly concurrency: number;
  readonly budget: number;
  readonly retries: number;
  /** The waves this run hands off (after --shard). */
  readonly waves: readonly Wave<FleetTarget>[];
  readonly shard: Shard | undefined;
  readonly engine: 'local' | 'job';
  readonly fleetRunId: string;
  readonly actor: { readonly user: string; readonly host: string };
  readonly audit: FleetAudit;
  readonly clock: Clock;
}

/** A fleet run with its two fleet events. */
export interface RecordedFleetResult<S> {
  readonly fleetRunId: string;
  readonly result: FleetResult<S>;
  readonly started: AuditAppendResult;
  readonly finished: AuditAppendResult;
}

/** A fleet run id: `fleet-` + UTC time + 6 random hex digits. */
export function newFleetRunId(now: Date): string {
  return `fleet-${now.toISOString().replace(/[-:T]/g, '').slice(0, 14)}-${randomBytes(3).toString('hex')}`;
}

/**
 * Runs a fleet between a `fleet-started` and a `fleet-finished` event in the one audit log; every cluster's handoff
 * event lands between them through the same writer. fleet-finished says how each cluster ended and where its event is.
 * @throws {ConfigError} when a fleet event cannot be recorded.
 */
export async function runRecordedFleet<S extends RecordedSummary>(
  o: RecordedFleetOptions<S>,
): Promise<RecordedFleetResult<S>> {
  const startedAt = o.clock.now().toISOString();
  const frame = {
    fleetRunId: o.fleetRunId,
    fleet: {
      name: o.fleet.name,
      fileDigest: `sha256:${createHash('sha256').update(readFileSync(o.fleet.file)).digest('hex')}`,
      clusterCount: o.fleet.fleet.clusters.length,
    },
    actor: { user: o.actor.user.slice(0, 253), host: o.actor.host, via: 'fleet' as const },
    engine: o.engine,
    ...(o.shard && o.shard.count > 1 ? { shard: o.shard } : {}),
    policy: { concurrency: o.concurrency, failureBudget: o.budget, retries: o.retries },
    startedAt,
  };
  const started = await o.audit.appendFleet({
    ...frame,
    phase: 'started',
    waves: o.waves.map((w) => ({ index: w.index, name: w.name, clusters: w.clusters.map((c) => ({ name: c.name })) })),
  });
  const result = await o.execute();
  const record: FleetRecord = {
    ...frame,
    phase: 'finished',
    finishedAt: o.clock.now().toISOString(),
    outcome: result.outcome,
    failed: result.budget.failed,
    waves: result.waves.map((w) => ({ index: w.index, name: w.name, clusters: w.clusters.map(clusterEntry) })),
  };
  const finished = await o.audit.appendFleet(record);
  return { fleetRunId: o.fleetRunId, result, started, finished };
}

function clusterEntry(c: ClusterResult<RecordedSummary>): FleetRecord['waves'][number]['clusters'][number] {
  return {
    name: c.name,
    status: c.status,
    attempts: c.attempts,
    ...(c.summary?.runId ? { runId: c.summary.runId } : {}),
    ...(c.summary?.audit ? { auditIndex: c.summary.audit.index } : {}),
  };
}
