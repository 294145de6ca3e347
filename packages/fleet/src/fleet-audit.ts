import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  AuditLog,
  createFleetEvent,
  createHandoffEvent,
  type FleetRecord,
  type HandoffEvent,
  type HandoffRecord,
  openSigner,
  probeSigner,
  type SignerIdentity,
  type SignerSpec,
} from '@baton/audit';
import { type AuditAppendResult, type AuditSink, appendEvent, withSigner } from '@baton/core';

/** Options of {@link openFleetAudit}. */
export interface FleetAuditOptions {
  readonly logPath: string;
  readonly signer: SignerSpec;
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
 * @throws {ConfigError} or {ProcessError} when the signer or the log cannot be opened.
 */
export async function openFleetAudit(o: FleetAuditOptions): Promise<FleetAudit> {
  const key = await openSigner(o.signer, 'audit.signer');
  let log: AuditLog;
  let identity: SignerIdentity;
  try {
    // The signer signs a probe before any cluster is touched: each handoff's own check then has nothing left to ask.
    identity = await probeSigner(key);
    await mkdir(dirname(o.logPath), { recursive: true });
    log = await AuditLog.open(o.logPath, { origin: o.origin, signer: key });
  } catch (err) {
    await key.close?.();
    throw err;
  }
  const byRunId = new Map<string, Promise<AuditAppendResult>>();
  const append = async (event: Promise<HandoffEvent>): Promise<AuditAppendResult> =>
    appendEvent(log, await event, o.logPath);
  return {
    sink: {
      check: async () => identity,
      append(record: HandoffRecord) {
        const seen = byRunId.get(record.runId);
        if (seen) return seen;
        const stamped: HandoffRecord = { ...record, actor: { ...record.actor, fleetRunId: o.fleetRunId } };
        const p = Promise.resolve().then(() => append(createHandoffEvent(withSigner(stamped, key), key)));
        byRunId.set(record.runId, p);
        p.catch(() => byRunId.delete(record.runId));
        return p;
      },
    },
    appendFleet: (record) => append(createFleetEvent(record, key)),
    close: async () => {
      try {
        await log.close();
      } finally {
        await key.close?.();
      }
    },
  };
}
