import { open } from 'node:fs/promises';

/** A block of whole lines: `bytes` ends in a newline. */
export interface LinesBlock {
  readonly type: 'lines';
  readonly bytes: Buffer;
  /** File offset of `bytes[0]`. */
  readonly offset: number;
}
/** Bytes after the last newline at the end of the file: a line still being written, or torn by a crash. */
export interface TornBlock {
  readonly type: 'torn';
  readonly bytes: Buffer;
  readonly offset: number;
}
/** A line longer than the limit; reading stops here, so hostile input cannot exhaust memory. */
export interface OversizedBlock {
  readonly type: 'oversized';
  readonly offset: number;
}
/** What {@link readLineBlocks} yields. */
export type LineBlock = LinesBlock | TornBlock | OversizedBlock;

/** Options of {@link readLineBlocks}. */
export interface ReadLineBlocksOptions {
  /** File offset to start at. @default 0 */
  readonly start?: number;
  /** Stop reading at this offset (e.g. the size when verification began). @default end of file */
  readonly end?: number;
  /** Bytes read per call; each `lines` block is at most this plus one line. @default 1 MiB */
  readonly blockBytes?: number;
  /** Longest line accepted. @default 1 MiB */
  readonly maxLineBytes?: number;
}

/**
 * Streams a file as blocks of whole lines, in order, with flat memory. Every yielded buffer is freshly allocated
 * and unpooled, so the consumer may transfer it to a worker thread.
 */
export async function* readLineBlocks(path: string, options: ReadLineBlocksOptions = {}): AsyncGenerator<LineBlock> {
  const blockBytes = options.blockBytes ?? 1 << 20;
  const maxLineBytes = options.maxLineBytes ?? 1 << 20;
  const end = options.end ?? Number.POSITIVE_INFINITY;
  const fh = await open(path, 'r');
  try {
    let pos = options.start ?? 0;
    let carry = Buffer.alloc(0);
    for (;;) {
      const want = Math.min(blockBytes, end - pos);
      // Allocate above the pool threshold so the ArrayBuffer is ours alone and can be transferred.
      const buf = Buffer.allocUnsafeSlow(Math.max(carry.length + want, 8192));
      carry.copy(buf);
      const { bytesRead } = want > 0 ? await fh.read(buf, carry.length, want, pos) : { bytesRead: 0 };
      pos += bytesRead;
      const filled = carry.length + bytesRead;
      if (bytesRead === 0) {
        if (filled > 0) yield { type: 'torn', bytes: buf.subarray(0, filled), offset: pos - filled };
        return;
      }
      const lastNewline = buf.lastIndexOf(10, filled - 1);
      if (lastNewline < 0) {
        if (filled > maxLineBytes) {
          yield { type: 'oversized', offset: pos - filled };
          return;
        }
        carry = buf.subarray(0, filled);
        continue;
      }
      // Copy the partial line out first: the block may be transferred (detached) as soon as it is yielded.
      carry = Buffer.from(buf.subarray(lastNewline + 1, filled));
      yield { type: 'lines', bytes: buf.subarray(0, lastNewline + 1), offset: pos - filled };
    }
  } finally {
    await fh.close();
  }
}

/** Calls `fn(start, end)` for each newline-terminated line in `bytes` (end excludes the newline). */
export function forEachLine(bytes: Uint8Array, fn: (start: number, end: number) => void): void {
  let start = 0;
  for (;;) {
    const nl = bytes.indexOf(10, start);
    if (nl < 0) return;
    fn(start, nl);
    start = nl + 1;
  }
}
