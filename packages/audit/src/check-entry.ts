import { envelopeFieldsOf, type LogEntry } from './handoff-event.js';
import { parseLogLine, parseStatementPayload } from './parse-entry.js';
import { decodeStrictBase64, verifyEd25519 } from './signing-key.js';
import type { HandoffStatement } from './statement.js';
import { isKeyValidAt, type TrustedKey, type TrustedKeySet } from './trusted-keys.js';

/**
 * What is wrong with one line on its own. The log-level verifier turns these into failure kinds, because the same
 * evidence means different things inside and outside what a checkpoint vouches for.
 */
export const EntryProblem = {
  /** Not UTF-8 JSON, or not a log entry by the schema. */
  corrupt: 'corrupt',
  /** A trusted key's DSSE signature does not verify over the payload. */
  signature: 'signature',
  /** No signature from a trusted key, or only from a key outside its validity window. */
  unknownKey: 'unknown-key',
  /** The unsigned CloudEvents envelope disagrees with the signed statement. */
  binding: 'binding',
  /** The event is dated after the log recorded it. */
  timeOrder: 'time-order',
} as const;
/** Kind of an {@link EntryProblem}. */
export type EntryProblem = (typeof EntryProblem)[keyof typeof EntryProblem];

/** The result of checking one line. */
export interface EntryCheck {
  /** The entry's `batonindex`, when the line parsed that far. */
  readonly index: number | undefined;
  /** The entry's `recordedtime` in epoch ms, when the line parsed that far. */
  readonly recordedMs: number | undefined;
  /** The first problem found, if any. */
  readonly problem: { readonly kind: EntryProblem; readonly message: string } | undefined;
  /** The parsed entry and statement, when `decode` was asked for and the line parsed. */
  readonly entry?: LogEntry;
  readonly statement?: HandoffStatement;
}

/**
 * Checks one log line (its bytes without the newline): schema, every trusted DSSE signature, the key's validity
 * window, the envelope against the signed statement, and event time against recorded time.
 * Never throws: hostile bytes give a `corrupt` problem.
 */
export function checkEntry(line: Uint8Array, keys: TrustedKeySet, decode = false): EntryCheck {
  const fail = (kind: EntryProblem, message: string, index?: number, recordedMs?: number): EntryCheck => ({
    index,
    recordedMs,
    problem: { kind, message },
  });
  const parsedLine = parseLogLine(line);
  if ('problem' in parsedLine) return fail(EntryProblem.corrupt, parsedLine.problem, parsedLine.index);
  const { entry, payload, pae } = parsedLine;
  const index = entry.batonindex;
  const recordedMs = Date.parse(entry.recordedtime);
  const env = entry.data;

  const candidates: { key: TrustedKey; sig: string }[] = [];
  for (const s of env.signatures) {
    for (const key of keys.forDsseKeyId(s.keyid)) candidates.push({ key, sig: s.sig });
  }
  if (candidates.length === 0) {
    const ids = env.signatures.map((s) => s.keyid).join(', ');
    return fail(EntryProblem.unknownKey, `is signed only by keys that are not trusted (${ids})`, index, recordedMs);
  }
  const verified = candidates.filter((c) => {
    const sig = decodeStrictBase64(c.sig);
    return sig !== undefined && verifyEd25519(c.key.keyObject, pae, sig);
  });
  if (verified.length === 0) {
    return fail(
      EntryProblem.signature,
      `has a DSSE signature by ${candidates[0]!.key.name} that does not verify over its payload`,
      index,
      recordedMs,
    );
  }

  const statement = parseStatementPayload(payload);
  if (typeof statement === 'string') return fail(EntryProblem.corrupt, statement, index, recordedMs);
  const record = statement.predicate;
  const eventMs = Date.parse(record.finishedAt);
  if (!verified.some((c) => isKeyValidAt(c.key, eventMs))) {
    const k = verified[0]!.key;
    return fail(
      EntryProblem.unknownKey,
      `is signed by ${k.name}, which is trusted only ${windowText(k)}, but the event is dated ${record.finishedAt}`,
      index,
      recordedMs,
    );
  }
  const expected = envelopeFieldsOf(record);
  for (const field of ['id', 'source', 'subject', 'time'] as const) {
    if (entry[field] !== expected[field]) {
      return fail(
        EntryProblem.binding,
        `has envelope ${field} "${entry[field]}" but its signed statement says "${expected[field]}"`,
        index,
        recordedMs,
      );
    }
  }
  if (eventMs > recordedMs) {
    return fail(
      EntryProblem.timeOrder,
      `is dated ${entry.time}, after it was recorded (${entry.recordedtime})`,
      index,
      recordedMs,
    );
  }
  return decode
    ? { index, recordedMs, problem: undefined, entry, statement }
    : { index, recordedMs, problem: undefined };
}

function windowText(k: TrustedKey): string {
  const from = Number.isFinite(k.validFromMs) ? `from ${new Date(k.validFromMs).toISOString()}` : '';
  const until = Number.isFinite(k.validUntilMs) ? `until ${new Date(k.validUntilMs).toISOString()}` : '';
  return [from, until].filter(Boolean).join(' ') || 'always';
}
