import { AuditVerifyError } from '@baton/errors';
import { forEachLine, readLineBlocks } from './line-blocks.js';
import { HASH_BYTES, hashLeaf } from './merkle-tree.js';

/** The first `size` leaf hashes of a log, packed, plus the bytes of the line at `keepIndex` if asked for. */
export interface LeafHashes {
  readonly leaves: Buffer;
  readonly kept: Buffer | undefined;
}

/**
 * Streams a log and returns the leaf hashes of its first `size` lines (32 bytes per entry: 32 MB for a million).
 * @throws {AuditVerifyError} when the log has fewer than `size` complete lines.
 */
export async function readLeafHashes(logPath: string, size: number, keepIndex?: number): Promise<LeafHashes> {
  const leaves = Buffer.alloc(size * HASH_BYTES);
  let n = 0;
  let kept: Buffer | undefined;
  for await (const block of readLineBlocks(logPath)) {
    if (block.type !== 'lines' || n >= size) break;
    const bytes = block.bytes;
    forEachLine(bytes, (s, e) => {
      if (n >= size) return;
      const line = bytes.subarray(s, e);
      if (n === keepIndex) kept = Buffer.from(line);
      leaves.set(hashLeaf(line), n * HASH_BYTES);
      n++;
    });
  }
  if (n < size) {
    throw new AuditVerifyError(
      `audit log ${logPath} has ${n} entries, fewer than the ${size} its checkpoint covers; run \`baton audit verify\``,
    );
  }
  return { leaves, kept };
}
