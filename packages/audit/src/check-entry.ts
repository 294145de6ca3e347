import { type AuditStatement, envelopeFieldsOfStatement, type LogEntry } from './handoff-event.js';
import { parseLogLine, parseStatementPayload } from './parse-entry.js';
import { decodeStrictBase64, verifyEd25519 } from './signing-key.js';
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
  readonly statement?: AuditStatement;
}

/** A trusted key that a DSSE signature of the entry names, with that signature (undefined: not canonical base64). */
export interface SignatureCandidate {
  readonly key: TrustedKey;
  readonly sig: Buffer | undefined;
}

/** A line that parsed as an entry and names trusted keys, whose signatures are still to be verified. */
export interface PendingEntry {
  readonly entry: LogEntry;
  readonly payload: Buffer;
  readonly pae: Buffer;
  readonly index: number;
  readonly recordedMs: number;
  readonly candidates: readonly SignatureCandidate[];
}

/**
 * Checks one log line (its bytes without the newline): schema, every trusted DSSE signature, the key's validity
 * window, the envelope against the signed statement, and event time against recorded time.
 * Never throws: hostile bytes give a `corrupt` problem. The three stages are exported for {@link checkChunk},
 * which runs each over a batch of lines.
 */
export function checkEntry(line: Uint8Array, keys: TrustedKeySet, decode = false): EntryCheck {
  const pending = beginEntryCheck(line, keys);
  return 'candidates' in pending ? finishEntryCheck(pending, verifyCandidates(pending), decode) : pending;
}

/** First stage of {@link checkEntry}: parses the line and finds the trusted keys its signatures name. */
export function beginEntryCheck(line: Uint8Array, keys: TrustedKeySet): PendingEntry | EntryCheck {
  const parsedLine = parseLogLine(line);
  if ('problem' in parsedLine) return failed(EntryProblem.corrupt, parsedLine.problem, parsedLine.index);
  const { entry, payload, pae } = parsedLine;
  const index = entry.batonindex;
  const recordedMs = Date.parse(entry.recordedtime);
  const candidates: SignatureCandidate[] = [];
  for (const s of entry.data.signatures) {
    for (const key of keys.forDsseKeyId(s.keyid)) candidates.push({ key, sig: decodeStrictBase64(s.sig) });
  }
  if (candidates.length === 0) {
    const ids = entry.data.signatures.map((s) => s.keyid).join(', ');
    return failed(EntryProblem.unknownKey, `is signed only by keys that are not trusted (${ids})`, index, recordedMs);
  }
  return { entry, payload, pae, index, recordedMs, candidates };
}

/** Second stage of {@link checkEntry}: the candidates whose Ed25519 signature verifies over the PAE. */
export function verifyCandidates(pending: PendingEntry): SignatureCandidate[] {
  return pending.candidates.filter((c) => c.sig !== undefined && verifyEd25519(c.key.keyObject, pending.pae, c.sig));
}

/**
 * Last stage of {@link checkEntry}: given the verified candidates, checks the signed statement's schema, the key's
 * validity window, the envelope binding and time order.
 */
export function finishEntryCheck(
  pending: PendingEntry,
  verified: readonly SignatureCandidate[],
  decode = false,
): EntryCheck {
  const { entry, index, recordedMs } = pending;
  if (verified.length === 0) {
    return failed(
      EntryProblem.signature,
      `has a DSSE signature by ${pending.candidates[0]!.key.name} that does not verify over its payload`,
      index,
      recordedMs,
    );
  }
  const statement = parseStatementPayload(pending.payload);
  if (typeof statement === 'string') return failed(EntryProblem.corrupt, statement, index, recordedMs);
  const expected = envelopeFieldsOfStatement(statement);
  const eventMs = Date.parse(expected.time);
  if (!verified.some((c) => isKeyValidAt(c.key, eventMs))) {
    const k = verified[0]!.key;
    return failed(
      EntryProblem.unknownKey,
      `is signed by ${k.name}, which is trusted only ${windowText(k)}, but the event is dated ${expected.time}`,
      index,
      recordedMs,
    );
  }
  for (const field of ['id', 'source', 'type', 'subject', 'time'] as const) {
    if (entry[field] !== expected[field]) {
      return failed(
        EntryProblem.binding,
        `has envelope ${field} "${entry[field]}" but its signed statement says "${expected[field]}"`,
        index,
        recordedMs,
      );
    }
  }
  if (eventMs > recordedMs) {
    return failed(
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

function failed(kind: EntryProblem, message: string, index?: number, recordedMs?: number): EntryCheck {
  return { index, recordedMs, problem: { kind, message } };
}

function windowText(k: TrustedKey): string {
  const from = Number.isFinite(k.validFromMs) ? `from ${new Date(k.validFromMs).toISOString()}` : '';
  const until = Number.isFinite(k.validUntilMs) ? `until ${new Date(k.validUntilMs).toISOString()}` : '';
  return [from, until].filter(Boolean).join(' ') || 'always';
}
