import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  AuditLog,
  createFleetEvent,
  createHandoffEvent,
  type FleetRecord,
  type HandoffEvent,
  type HandoffRecord,
  readSigningKeyFile,
} from '@baton/audit';
import type { AuditAppendResult, AuditSink } from '@baton/core';

/** Options of {@link openFleetAudit}. */
export interface FleetAuditOptions {
  readonly logPath: string;
  readonly signingKeyPath: string;
  readonly origin: string;
  /** Stamped on every handoff record as `actor.fleetRunId`. */
  readonly fleetRunId: string;
}

/** The fleet run's one writer of the audit log: every cluster's handoff event and the fleet's own events. */
export interface FleetAudit {
  /** Core's AuditSink for each cluster's runHandoff (and for the Job engine's shards, through the orchestrator). */
  readonly sink: AuditSink;
  /** Appends fleet-started or fleet-finished. */
  appendFleet(record: FleetRecord): Promise<AuditAppendResult>;
  close(): Promise<void>;
}

/**
 * Opens the log once for the whole run (the key is read once; appends queue on one AuditLog, each under the
 * cross-process lock, so nothing else writing the log is shut out). A handoff record whose run already has an event
 * appended by this writer is not appended twice: a shard pod replaced after its append gets the first result back.
 * @throws {ConfigError} when the key or the log cannot be opened.
 */
export async function openFleetAudit(o: FleetAuditOptions): Promise<FleetAudit> {
  const key = await readSigningKeyFile(o.signingKeyPath);
  await mkdir(dirname(o.logPath), { recursive: true });
  const log = await AuditLog.open(o.logPath, { origin: o.origin, signer: key });
  const byRunId = new Map<string, Promise<AuditAppendResult>>();
  const append = async (event: HandoffEvent): Promise<AuditAppendResult> => {
    const r = await log.append(event);
    return {
      index: r.firstIndex,
      eventId: event.id,
      eventDigest: `sha256:${createHash('sha256').update(JSON.stringify(event)).digest('hex')}`,
      checkpoint: await readFile(r.checkpoint, 'utf8'),
      checkpointPath: r.checkpoint,
      logPath: o.logPath,
    };
  };
  return {
    sink: {
      append(record: HandoffRecord) {
        const seen = byRunId.get(record.runId);
        if (seen) return seen;
        const stamped: HandoffRecord = { ...record, actor: { ...record.actor, fleetRunId: o.fleetRunId } };
        const p = Promise.resolve().then(() => append(createHandoffEvent(stamped, key)));
        byRunId.set(record.runId, p);
        p.catch(() => byRunId.delete(record.runId));
        return p;
      },
    },
    appendFleet: (record) => append(createFleetEvent(record, key)),
    close: () => log.close(),
  };
}
