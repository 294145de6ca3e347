import { hash } from 'node:crypto';
import { checkEntry, type EntryProblem } from './check-entry.js';
import { forEachLine } from './line-blocks.js';
import { HASH_BYTES, hashLeaf } from './merkle-tree.js';
import type { TrustedKeySet } from './trusted-keys.js';

// Enough to report the first failures precisely; a log that is wrong everywhere should not fill memory.
const MAX_PROBLEMS_PER_CHUNK = 32;

/** A problem on one line of a chunk; `line` counts from the chunk's first line. */
export interface ChunkProblem {
  readonly line: number;
  readonly kind: EntryProblem;
  readonly message: string;
}

/** What checking one block of lines gives the sequencer. Typed arrays so it crosses threads cheaply. */
export interface ChunkResult {
  /** Lines in the chunk. */
  readonly count: number;
  /** RFC 6962 leaf hashes, 32 bytes per line. */
  readonly leafHashes: Uint8Array;
  /** `batonindex` per line; NaN where the line did not parse. */
  readonly indexes: Float64Array;
  /** `recordedtime` per line in epoch ms; NaN where the line did not parse. */
  readonly recordedMs: Float64Array;
  readonly problems: readonly ChunkProblem[];
}

// RFC 6962 leaf hash without copying the line: the byte before it is the previous line's newline, so it is briefly
// set to the 0x00 leaf prefix and hashed along. Saves a multi-KB allocation and copy per entry; bytes are restored.
function hashLeafInPlace(bytes: Uint8Array, start: number, end: number): Buffer {
  const saved = bytes[start - 1]!;
  bytes[start - 1] = 0x00;
  try {
    return hash('sha256', bytes.subarray(start - 1, end), 'buffer');
  } finally {
    bytes[start - 1] = saved;
  }
}

/** Hashes and checks every line of a block (see {@link checkEntry}). Pure; runs in a worker or inline. */
export function checkChunk(bytes: Uint8Array, keys: TrustedKeySet): ChunkResult {
  let count = 0;
  forEachLine(bytes, () => {
    count++;
  });
  const leafHashes = new Uint8Array(count * HASH_BYTES);
  const indexes = new Float64Array(count);
  const recordedMs = new Float64Array(count);
  const problems: ChunkProblem[] = [];
  let i = 0;
  forEachLine(bytes, (start, end) => {
    const line = bytes.subarray(start, end);
    leafHashes.set(start > 0 ? hashLeafInPlace(bytes, start, end) : hashLeaf(line), i * HASH_BYTES);
    const check = checkEntry(line, keys);
    indexes[i] = check.index ?? Number.NaN;
    recordedMs[i] = check.recordedMs ?? Number.NaN;
    if (check.problem && problems.length < MAX_PROBLEMS_PER_CHUNK) problems.push({ line: i, ...check.problem });
    i++;
  });
  return { count, leafHashes, indexes, recordedMs, problems };
}
