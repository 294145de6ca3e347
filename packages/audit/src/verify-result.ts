/** What kind of tampering or damage verification found. */
export const VerifyFailureKind = {
  /** An entry differs from what was signed or checkpointed (a changed byte, a changed field). */
  edited: 'edited',
  /** Entries were removed from the middle of the log. */
  missing: 'missing',
  /** Entries are out of order: swapped, moved or duplicated. */
  reordered: 'reordered',
  /** The log ends before the newest checkpoint's tree size. */
  truncated: 'truncated',
  /** Signed only by keys that are not trusted, or by a trusted key outside its validity window. */
  unknownKey: 'unknown-key',
  /** A trusted key's signature does not verify on something no checkpoint vouches for: a forgery. */
  badSignature: 'bad-signature',
  /** A line or checkpoint file that is not valid JSON / UTF-8 / the schema. */
  corrupt: 'corrupt',
  /** Recorded times go backwards, or an event is dated after it was recorded. */
  timeOrder: 'time-order',
  /** No trusted checkpoint exists for the log. */
  checkpointMissing: 'checkpoint-missing',
  /** A checkpoint is for another log origin. */
  originMismatch: 'origin-mismatch',
  /** Two checkpoints that cannot both describe this log (a fork). */
  inconsistent: 'inconsistent',
} as const;
/** What kind of tampering or damage verification found. */
export type VerifyFailureKind = (typeof VerifyFailureKind)[keyof typeof VerifyFailureKind];

/** One verification failure. The message names the file, the line/index, the rule broken and what to do. */
export interface VerifyFailure {
  readonly kind: VerifyFailureKind;
  /** Entry index (0-based) where the failure is, when it is about an entry. */
  readonly index?: number;
  /** 1-based line number in the log file, when it is about a line. */
  readonly line?: number;
  /** The checkpoint file, when it is about a checkpoint. */
  readonly checkpoint?: string;
  readonly message: string;
}

/** The outcome of {@link verifyLog}. */
export interface VerifyResult {
  /** True only when nothing failed. */
  readonly ok: boolean;
  /** The log file verified. */
  readonly log: string;
  /** Origin of the trusted keys (and so of every trusted checkpoint). */
  readonly origin: string;
  /** Complete lines read. */
  readonly entries: number;
  /** Checkpoint files found / trusted. */
  readonly checkpointFiles: number;
  readonly trustedCheckpoints: number;
  /** Tree size and root (hex) of the newest trusted checkpoint; 0 and undefined when there is none. */
  readonly checkpointedSize: number;
  readonly root: string | undefined;
  /** Entries after the newest checkpoint: individually verified but not yet anchored. */
  readonly uncheckpointedEntries: number;
  /** Failures, first failure first (by entry index; checkpoint-level failures first of all). At most 100. */
  readonly failures: readonly VerifyFailure[];
  /**
   * How many failures were found. Only the first 32 per 1 MiB block and 1,000 in all are examined, so for a log that
   * is damaged everywhere this is a lower bound.
   */
  readonly failureCount: number;
  /** Facts that do not fail verification but a reviewer should know (e.g. an unfinished trailing line). */
  readonly warnings: readonly string[];
}
