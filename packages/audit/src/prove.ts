import { AuditVerifyError, ConfigError } from '@baton/errors';
import { checkEntry } from './check-entry.js';
import { parseCheckpoint } from './checkpoint.js';
import { listCheckpoints, readCheckpointFile } from './checkpoint-store.js';
import type { AuditStatement, LogEntry } from './handoff-event.js';
import { readLeafHashes } from './leaf-hashes.js';
import { consistencyProof, inclusionProof, verifyInclusionProof } from './merkle-proof.js';
import { hashLeaf, subtreeRoot } from './merkle-tree.js';
import { parseNote } from './signed-note.js';
import type { TrustedKeySet } from './trusted-keys.js';
import { verifyCheckpointNote } from './verify-checkpoint.js';
import type { VerifyFailureKind } from './verify-result.js';

const TLOG_PROOF_HEADER = 'c2sp.org/tlog-proof@v1';

/** A self-contained proof that one entry is in the log: the entry, its audit path, and the signed checkpoint. */
export interface InclusionProof {
  /** Entry index (0-based). */
  readonly index: number;
  /** The entry's exact log line (without newline): the leaf data. */
  readonly entry: Buffer;
  /** RFC 6962 audit path, leaf to root. */
  readonly hashes: readonly Buffer[];
  /** The signed checkpoint note the path leads to, verbatim. */
  readonly checkpoint: string;
}

/** Options of {@link proveInclusion}. */
export interface ProveOptions {
  /** Prove against this checkpoint file instead of the newest. */
  readonly checkpoint?: string;
}

/**
 * Builds an inclusion proof for entry `index` against the newest checkpoint (or the one given). Streams the log
 * once and keeps its leaf hashes (32 bytes per entry).
 * @throws {ConfigError} when the index is not a covered entry or there is no checkpoint.
 * @throws {AuditVerifyError} when the log does not match the checkpoint.
 */
export async function proveInclusion(
  logPath: string,
  index: number,
  options: ProveOptions = {},
): Promise<InclusionProof> {
  const { note, size, root, file } = await pickCheckpoint(logPath, options.checkpoint);
  if (!Number.isSafeInteger(index) || index < 0 || index >= size) {
    throw new ConfigError(
      `entry ${index} is not in checkpoint ${file}, which covers entries 0 to ${size - 1}; pass an index in that range`,
    );
  }
  const { leaves, kept } = await readLeafHashes(logPath, size, index);
  if (!subtreeRoot(leaves, 0, size).equals(root)) {
    throw new AuditVerifyError(
      `audit log ${logPath} does not match checkpoint ${file}; run \`baton audit verify\` to find where`,
    );
  }
  return { index, entry: kept!, hashes: inclusionProof(leaves, index, size), checkpoint: note };
}

/**
 * Builds an RFC 9162 consistency proof between the log's first `oldSize` and `newSize` entries.
 * @throws {ConfigError} when the sizes are out of range.
 */
export async function proveConsistency(logPath: string, oldSize: number, newSize: number): Promise<Buffer[]> {
  if (!(Number.isSafeInteger(oldSize) && Number.isSafeInteger(newSize) && oldSize >= 0 && oldSize <= newSize)) {
    throw new ConfigError(`cannot prove consistency from size ${oldSize} to ${newSize}: need 0 ≤ old ≤ new`);
  }
  const { leaves } = await readLeafHashes(logPath, newSize);
  return consistencyProof(leaves, oldSize, newSize);
}

/** Formats a proof as C2SP tlog-proof text; the entry line travels base64-encoded in the `extra` line. */
export function formatTlogProof(proof: InclusionProof): string {
  const hashes = proof.hashes.map((h) => `${h.toString('base64')}\n`).join('');
  return `${TLOG_PROOF_HEADER}\nextra ${proof.entry.toString('base64')}\nindex ${proof.index}\n${hashes}\n${proof.checkpoint}`;
}

/** Parses C2SP tlog-proof text made by {@link formatTlogProof}. Returns a reason string on malformed input. */
export function parseTlogProof(text: string): InclusionProof | string {
  const lines = text.split('\n');
  if (lines[0] !== TLOG_PROOF_HEADER) return `the first line must be ${TLOG_PROOF_HEADER}`;
  if (!lines[1]?.startsWith('extra ')) return 'the proof has no "extra" line carrying the entry';
  const entry = Buffer.from(lines[1].slice('extra '.length), 'base64');
  const indexMatch = /^index (0|[1-9][0-9]{0,15})$/.exec(lines[2] ?? '');
  if (!indexMatch) return 'the third line must be "index <n>"';
  const hashes: Buffer[] = [];
  let i = 3;
  for (; i < lines.length && lines[i] !== ''; i++) {
    const h = Buffer.from(lines[i]!, 'base64');
    if (h.length !== 32 || h.toString('base64') !== lines[i]) return `proof line ${i + 1} is not a base64 SHA-256 hash`;
    hashes.push(h);
  }
  if (i >= lines.length) return 'the proof has no blank line before its checkpoint';
  return { index: Number(indexMatch[1]), entry, hashes, checkpoint: lines.slice(i + 1).join('\n') };
}

/** The outcome of {@link verifyInclusion}. */
export type InclusionVerdict =
  | {
      readonly ok: true;
      readonly index: number;
      readonly treeSize: number;
      readonly entry: LogEntry;
      readonly statement: AuditStatement;
    }
  | { readonly ok: false; readonly kind: VerifyFailureKind; readonly message: string };

/**
 * Verifies an inclusion proof offline: the checkpoint's signature and origin against the trusted keys, the audit
 * path from the entry's leaf hash to the checkpoint root, and the entry itself (schema, DSSE signature, key
 * window, envelope binding, batonindex). Never throws.
 */
export function verifyInclusion(proof: InclusionProof | string, keys: TrustedKeySet): InclusionVerdict {
  const p = typeof proof === 'string' ? parseTlogProof(proof) : proof;
  if (typeof p === 'string') return { ok: false, kind: 'corrupt', message: `not a tlog-proof: ${p}` };
  const cp = verifyCheckpointNote(p.checkpoint, keys);
  if (!cp.ok) return { ok: false, kind: cp.kind, message: `the proof's checkpoint ${cp.reason}` };
  const { size, root } = cp.checkpoint;
  if (!verifyInclusionProof(p.index, size, hashLeaf(p.entry), p.hashes, root)) {
    return {
      ok: false,
      kind: 'edited',
      message: `entry ${p.index} is not in the tree of size ${size} the checkpoint signs: the entry or the proof was changed`,
    };
  }
  const check = checkEntry(p.entry, keys, true);
  if (check.problem) {
    const kind =
      check.problem.kind === 'unknown-key' ? 'unknown-key' : check.problem.kind === 'corrupt' ? 'corrupt' : 'edited';
    return { ok: false, kind, message: `entry ${p.index} ${check.problem.message}` };
  }
  if (check.index !== p.index) {
    return {
      ok: false,
      kind: 'reordered',
      message: `the entry says batonindex ${check.index}, but the proof is for index ${p.index}`,
    };
  }
  // The checkpoint was signed after the entry was recorded, so a key whose window closed before that cannot vouch.
  if (!cp.signedBy.some((k) => k.validUntilMs > check.recordedMs!)) {
    return {
      ok: false,
      kind: 'unknown-key',
      message: 'the checkpoint is signed only by keys whose validity ended before the entry was recorded',
    };
  }
  return { ok: true, index: p.index, treeSize: size, entry: check.entry!, statement: check.statement! };
}

async function pickCheckpoint(
  logPath: string,
  explicit: string | undefined,
): Promise<{ note: string; size: number; root: Buffer; file: string }> {
  const file = explicit ?? (await listCheckpoints(logPath)).at(-1)?.path;
  if (!file) {
    throw new ConfigError(
      `no checkpoint next to audit log ${logPath}; a proof needs a signed checkpoint (append to the log to create one)`,
    );
  }
  let note: string;
  try {
    note = (await readCheckpointFile(file)).toString('utf8');
  } catch (err) {
    throw new ConfigError(`cannot read checkpoint ${file}: ${(err as Error).message}`, { cause: err });
  }
  const parsed = parseNote(note);
  const cp = typeof parsed === 'string' ? parsed : parseCheckpoint(parsed.text);
  if (typeof cp === 'string')
    throw new AuditVerifyError(`checkpoint ${file} is damaged: ${cp}; run \`baton audit verify\``);
  return { note, size: cp.size, root: cp.root, file };
}
