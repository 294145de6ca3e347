import { HASH_BYTES } from './merkle-tree.js';

/**
 * The origin used when none is configured: a plan's `audit.origin` default, so a key `baton audit keygen` makes
 * without `--origin` verifies the log a plan without `audit.origin` writes. Give each real log its own, e.g.
 * `example.com/baton/audit`.
 */
export const DEFAULT_ORIGIN = 'baton.dev/handoff';

/** The body of a C2SP tlog-checkpoint: which log, how many entries, and the RFC 6962 root over them. */
export interface Checkpoint {
  /** Unique identity of the log, e.g. `example.com/baton/audit`. */
  readonly origin: string;
  /** Number of entries the root covers. */
  readonly size: number;
  /** RFC 6962 Merkle tree hash of the first `size` entries. */
  readonly root: Buffer;
}

/** Formats a checkpoint body: `origin\nsize\nbase64(root)\n` (no extension lines; C2SP calls them NOT RECOMMENDED). */
export function formatCheckpoint(cp: Checkpoint): string {
  return `${cp.origin}\n${cp.size}\n${cp.root.toString('base64')}\n`;
}

/** True when `origin` can stand on the first line of a checkpoint: printable, non-empty, no surrounding spaces. */
export function isValidOrigin(origin: string): boolean {
  return origin.length > 0 && origin.length <= 512 && origin.trim() === origin && !/\p{Cc}/u.test(origin);
}

/**
 * Parses the text of a signed note as a C2SP tlog-checkpoint. Extension lines are allowed and ignored.
 * Returns a reason string instead of throwing.
 */
export function parseCheckpoint(text: string): Checkpoint | string {
  const lines = text.split('\n');
  if (lines.length < 4 || lines[lines.length - 1] !== '')
    return 'a checkpoint has at least 3 lines: origin, size, root';
  const [origin, sizeText, rootText] = lines as [string, string, string];
  if (!isValidOrigin(origin)) return 'the checkpoint origin line is empty or has surrounding spaces';
  if (!/^(0|[1-9][0-9]{0,15})$/.test(sizeText) || !Number.isSafeInteger(Number(sizeText))) {
    return `the checkpoint size "${sizeText.slice(0, 40)}" is not a decimal count without leading zeros`;
  }
  const root = Buffer.from(rootText, 'base64');
  if (root.length !== HASH_BYTES || root.toString('base64') !== rootText) {
    return 'the checkpoint root is not base64 of a 32-byte hash';
  }
  return { origin, size: Number(sizeText), root };
}
