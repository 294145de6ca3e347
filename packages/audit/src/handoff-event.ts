import { ConfigError } from '@baton/errors';
import { z } from 'zod';
import { DsseEnvelopeSchema, IN_TOTO_PAYLOAD_TYPE, signEnvelope } from './dsse.js';
import { fastSafeParse } from './fast-validator.js';
import {
  buildFleetStatement,
  FLEET_EVENT_TYPE,
  FLEET_PREDICATE_TYPE,
  type FleetRecord,
  FleetRecordSchema,
  type FleetStatement,
  fleetEventTime,
} from './fleet-record.js';
import { type HandoffRecord, HandoffRecordSchema } from './handoff-record.js';
import { formatPath } from './parse-yaml.js';
import type { Signer } from './signing-key.js';
import { buildStatement, type HandoffStatement } from './statement.js';

/** CloudEvents `type` of a handoff event. */
export const HANDOFF_EVENT_TYPE = 'dev.baton.handoff.v1';
/** CloudEvents `datacontenttype`: the data is a DSSE JSON envelope. */
export const DSSE_CONTENT_TYPE = 'application/vnd.dsse.envelope.v1+json';

const Timestamp = z.iso.datetime({ offset: true });

/**
 * A signed event of the audit log: a CloudEvents 1.0 JSON envelope whose `data` is a DSSE envelope around an in-toto
 * Statement v1. `id`, `source`, `subject` and `time` are derived from the signed record, so a verifier can check
 * the unsigned envelope against it. Most events are handoffs (`dev.baton.handoff.v1`); a fleet run frames its
 * handoffs with a `fleet-started` and a `fleet-finished` event (`dev.baton.fleet.v1`).
 */
export const HandoffEventSchema = z
  .strictObject({
    specversion: z.literal('1.0'),
    id: z.string().min(1).max(128).describe('the record runId (fleet: <fleetRunId>.started or .finished)'),
    source: z.string().min(1).max(256).describe('urn:baton:<actor.via>'),
    type: z.enum([HANDOFF_EVENT_TYPE, FLEET_EVENT_TYPE]),
    subject: z.string().min(1).max(300).describe('cluster/<cluster.name> (fleet: fleet/<fleet.name>)'),
    time: Timestamp.describe('the record finishedAt (fleet-started: startedAt)'),
    datacontenttype: z.literal(DSSE_CONTENT_TYPE),
    data: DsseEnvelopeSchema,
  })
  .describe('CloudEvents 1.0 handoff event with a DSSE-signed in-toto statement as data');

/** A signed handoff event, not yet in a log. */
export type HandoffEvent = z.infer<typeof HandoffEventSchema>;

/**
 * One line of the audit log: the event plus two CloudEvents extension attributes the log adds under its lock:
 * `recordedtime` (when it was appended; never decreases) and `batonindex` (its position, from 0). They are not
 * covered by the event signature but by the Merkle tree and its signed checkpoints.
 */
export const LogEntrySchema = z
  .strictObject({
    ...HandoffEventSchema.shape,
    recordedtime: Timestamp.describe('when the log appended the event'),
    batonindex: z.number().int().nonnegative().describe('position in the log, from 0'),
  })
  .describe('one line of a baton audit log');

/** One line of the audit log. */
export type LogEntry = z.infer<typeof LogEntrySchema>;

/** The envelope fields a record determines; verification compares them with the signed statement. */
export function envelopeFieldsOf(record: HandoffRecord): Pick<HandoffEvent, 'id' | 'source' | 'subject' | 'time'> {
  return {
    id: record.runId,
    source: `urn:baton:${record.actor.via}`,
    subject: `cluster/${record.cluster.name}`,
    time: record.finishedAt,
  };
}

/** The envelope fields a fleet record determines. */
export function fleetEnvelopeFieldsOf(record: FleetRecord): Pick<HandoffEvent, 'id' | 'source' | 'subject' | 'time'> {
  return {
    id: `${record.fleetRunId}.${record.phase}`,
    source: `urn:baton:${record.actor.via}`,
    subject: `fleet/${record.fleet.name}`,
    time: fleetEventTime(record),
  };
}

/** A statement of either kind of event. */
export type AuditStatement = HandoffStatement | FleetStatement;

/** Whether a statement is a fleet run's. */
export function isFleetStatement(s: AuditStatement): s is FleetStatement {
  return s.predicateType === FLEET_PREDICATE_TYPE;
}

/** The envelope fields (type included) a statement of either kind determines. */
export function envelopeFieldsOfStatement(
  s: AuditStatement,
): Pick<HandoffEvent, 'id' | 'source' | 'type' | 'subject' | 'time'> {
  return isFleetStatement(s)
    ? { ...fleetEnvelopeFieldsOf(s.predicate), type: FLEET_EVENT_TYPE }
    : { ...envelopeFieldsOf(s.predicate), type: HANDOFF_EVENT_TYPE };
}

// Strings that are credentials, not fingerprints: a JWT (every k8s service-account token) or a PEM private key.
// Narrow on purpose: a false positive would make a handoff unrecordable.
const SECRET_PATTERNS: readonly RegExp[] = [
  /eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\./,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----/,
];

const parseRecord = fastSafeParse(HandoffRecordSchema);

/**
 * Builds and signs a fleet run's `fleet-started` or `fleet-finished` event.
 * @throws {ConfigError} when the record breaks {@link FleetRecordSchema}, naming the field and rule.
 */
export async function createFleetEvent(record: FleetRecord, signer: Signer | readonly Signer[]): Promise<HandoffEvent> {
  const parsed = FleetRecordSchema.safeParse(record);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`fleet record ${formatPath(issue.path)}: ${issue.message}`, {
      details: { path: formatPath(issue.path) },
    });
  }
  const signers = Array.isArray(signer) ? (signer as readonly Signer[]) : [signer as Signer];
  const payload = Buffer.from(JSON.stringify(buildFleetStatement(parsed.data)), 'utf8');
  return {
    specversion: '1.0',
    ...fleetEnvelopeFieldsOf(parsed.data),
    type: FLEET_EVENT_TYPE,
    datacontenttype: DSSE_CONTENT_TYPE,
    data: await signEnvelope(IN_TOTO_PAYLOAD_TYPE, payload, signers),
  };
}

/**
 * Builds and signs the audit event for a handoff record.
 * @param record the handoff record; validated against {@link HandoffRecordSchema}.
 * @param signer one key, or several during a key rotation (each adds a DSSE signature).
 * @throws {ConfigError} when the record breaks the schema (naming the field and rule) or contains something that
 * looks like a credential (the message names the field, never the value).
 */
export async function createHandoffEvent(
  record: HandoffRecord,
  signer: Signer | readonly Signer[],
): Promise<HandoffEvent> {
  const parsed = parseRecord(record);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`handoff record ${formatPath(issue.path)}: ${issue.message}`, {
      details: { path: formatPath(issue.path) },
    });
  }
  const leak = findSecret(parsed.data, []);
  if (leak) {
    throw new ConfigError(
      `handoff record ${leak}: looks like a credential; record its SHA-256 fingerprint or JTI, never the secret`,
      { details: { path: leak } },
    );
  }
  const signers = Array.isArray(signer) ? (signer as readonly Signer[]) : [signer as Signer];
  const payload = Buffer.from(JSON.stringify(buildStatement(parsed.data)), 'utf8');
  return {
    specversion: '1.0',
    ...envelopeFieldsOf(parsed.data),
    type: HANDOFF_EVENT_TYPE,
    datacontenttype: DSSE_CONTENT_TYPE,
    data: await signEnvelope(IN_TOTO_PAYLOAD_TYPE, payload, signers),
  };
}

/**
 * Serialises an event as one log line (without the newline). Key order is fixed so that the same event at the
 * same position always gives the same bytes; the bytes are what the Merkle tree hashes.
 */
export function serializeEntry(event: HandoffEvent, index: number, recordedtime: string): string {
  const entry: LogEntry = {
    specversion: event.specversion,
    id: event.id,
    source: event.source,
    type: event.type,
    subject: event.subject,
    time: event.time,
    datacontenttype: event.datacontenttype,
    recordedtime,
    batonindex: index,
    data: { payload: event.data.payload, payloadType: event.data.payloadType, signatures: event.data.signatures },
  };
  return JSON.stringify(entry);
}

function findSecret(value: unknown, path: PropertyKey[]): string | undefined {
  if (typeof value === 'string') {
    return SECRET_PATTERNS.some((p) => p.test(value)) ? formatPath(path) : undefined;
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const found = findSecret(v, [...path, Array.isArray(value) ? Number(k) : k]);
      if (found) return found;
    }
  }
  return undefined;
}
