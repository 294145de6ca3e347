import { timingSafeEqual } from 'node:crypto';
import type { ChunkResult } from './check-chunk.js';
import { EntryProblem } from './check-entry.js';
import { HASH_BYTES, MerkleFrontier } from './merkle-tree.js';
import type { TrustedKey } from './trusted-keys.js';
import { type VerifyFailure, VerifyFailureKind } from './verify-result.js';

/** A trusted checkpoint the sequencer checks the log against. */
export interface Anchor {
  readonly file: string;
  readonly size: number;
  readonly root: Buffer;
  readonly signedBy: readonly TrustedKey[];
}

/** An anchor whose root was compared with the log's prefix of the same size. */
interface AnchorCheck {
  readonly anchor: Anchor;
  readonly matches: boolean;
  /** recordedtime of the anchor's last entry (for the key validity window), NaN if unknown. */
  readonly lastRecordedMs: number;
}

// A log that is wrong on every line must not fill memory with a million messages: keep the first ones, count the rest.
const MAX_KEPT_FAILURES = 1000;

const FIX = {
  edited: 'restore the log from a copy that verifies',
  order: 'restore the log from a copy that verifies; entries must stay in the order they were appended',
  corrupt: 'the line was damaged or not written by baton; restore it from a copy that verifies',
  forged: 'treat the entry as forged: it was not signed by the key it names',
  key: 'add the signing key to the trusted-keys file (with its validity window) if you trust it',
} as const;

/**
 * Consumes checked chunks in log order and does everything that needs the whole sequence: the Merkle tree and
 * every checkpoint's root, the `batonindex` sequence (to tell missing from reordered from edited), and
 * recordedtime order. Memory is O(log n) plus the failures kept.
 */
export class LogSequencer {
  readonly #log: string;
  readonly #anchors: readonly Anchor[];
  readonly #coveredSize: number;
  readonly #frontier = new MerkleFrontier();
  readonly #anchorChecks: AnchorCheck[] = [];
  readonly #failures: VerifyFailure[] = [];
  #droppedFailures = 0;
  #nextAnchor = 0;
  #lastRecordedMs = Number.NEGATIVE_INFINITY;
  #timeFailed = false;
  // The first position whose batonindex is not its position, and what is needed to classify it.
  #mismatch: { position: number; value: number; next?: number; positionSeenLater: boolean } | undefined;

  /** @param anchors trusted checkpoints, any order. */
  constructor(log: string, anchors: readonly Anchor[]) {
    this.#log = log;
    this.#anchors = [...anchors].sort((a, b) => a.size - b.size);
    this.#coveredSize = this.#anchors.at(-1)?.size ?? 0;
    this.#checkAnchorsAtCurrentSize(Number.NaN);
  }

  /** Entries consumed so far. */
  get size(): number {
    return this.#frontier.size;
  }

  /** Consumes the next chunk's results. */
  accept(chunk: ChunkResult): void {
    const base = this.#frontier.size;
    const problems = new Map(chunk.problems.map((p) => [p.line, p]));
    for (let i = 0; i < chunk.count; i++) {
      const position = base + i;
      const problem = problems.get(i);
      if (problem) this.#entryProblem(position, problem.kind, problem.message);
      this.#checkIndex(position, chunk.indexes[i]!);
      this.#checkTime(position, chunk.recordedMs[i]!);
      this.#frontier.append(chunk.leafHashes.subarray(i * HASH_BYTES, (i + 1) * HASH_BYTES));
      this.#checkAnchorsAtCurrentSize(chunk.recordedMs[i]!);
    }
  }

  #checkAnchorsAtCurrentSize(lastRecordedMs: number): void {
    while (this.#nextAnchor < this.#anchors.length && this.#anchors[this.#nextAnchor]!.size === this.#frontier.size) {
      const anchor = this.#anchors[this.#nextAnchor++]!;
      this.#anchorChecks.push({ anchor, matches: timingSafeEqual(this.#frontier.root(), anchor.root), lastRecordedMs });
    }
  }

  /**
   * Finishes after the last chunk: truncation, root mismatches that no entry-level failure explains, and the
   * first index mismatch's classification.
   * @param tail what followed the last complete line.
   */
  finish(tail: { torn?: { line: number }; oversized?: { line: number } }): {
    failures: VerifyFailure[];
    droppedFailures: number;
    warnings: string[];
    anchorChecks: readonly AnchorCheck[];
  } {
    const warnings: string[] = [];
    const lines = this.#frontier.size;
    if (tail.oversized) {
      this.#failures.push({
        kind: VerifyFailureKind.corrupt,
        index: tail.oversized.line - 1,
        line: tail.oversized.line,
        message: `${this.#log}:${tail.oversized.line}: line is longer than 1 MiB with no newline; verification stopped there; ${FIX.corrupt}`,
      });
    }
    this.#classifyMismatch();
    if (lines < this.#coveredSize && !tail.oversized) {
      const newest = this.#anchors.at(-1)!;
      const torn = tail.torn ? ` (line ${tail.torn.line} is cut off without a newline)` : '';
      this.#failures.push({
        kind: VerifyFailureKind.truncated,
        index: lines,
        line: lines + 1,
        checkpoint: newest.file,
        message:
          `${this.#log}: the log ends after ${lines} entries${torn}, but checkpoint ${newest.file} vouches for ${newest.size}; ` +
          `entries ${lines} to ${newest.size - 1} were cut off; restore them from a copy that verifies`,
      });
    } else if (tail.torn) {
      warnings.push(
        `${this.#log}:${tail.torn.line}: the last line has no newline and no checkpoint covers it: an append was ` +
          'interrupted or is in progress; the next append (AuditLog.open) repairs it',
      );
    }
    this.#rootFailures();
    const uncovered = Math.max(0, lines - this.#coveredSize);
    if (uncovered > 0) {
      warnings.push(
        `${this.#log}: ${uncovered} entries after line ${this.#coveredSize} are signed but not yet covered by a checkpoint ` +
          '(an append is in progress or was interrupted; the next append checkpoints them)',
      );
    }
    return {
      failures: this.#failures,
      droppedFailures: this.#droppedFailures,
      warnings,
      anchorChecks: this.#anchorChecks,
    };
  }

  #entryProblem(position: number, kind: EntryProblem, message: string): void {
    const covered = position < this.#coveredSize;
    const where = `${this.#log}:${position + 1}: entry ${position}`;
    const push = (k: VerifyFailureKind, fix: string): void => {
      if (this.#failures.length >= MAX_KEPT_FAILURES) this.#droppedFailures++;
      else
        this.#failures.push({ kind: k, index: position, line: position + 1, message: `${where} ${message}; ${fix}` });
    };
    switch (kind) {
      case EntryProblem.corrupt:
        push(VerifyFailureKind.corrupt, FIX.corrupt);
        return;
      case EntryProblem.signature:
        // Inside what a checkpoint vouches for, a bad signature means the bytes changed after signing.
        if (covered) push(VerifyFailureKind.edited, FIX.edited);
        else push(VerifyFailureKind.badSignature, FIX.forged);
        return;
      case EntryProblem.unknownKey:
        push(VerifyFailureKind.unknownKey, FIX.key);
        return;
      case EntryProblem.binding:
        push(VerifyFailureKind.edited, FIX.edited);
        return;
      case EntryProblem.timeOrder:
        push(VerifyFailureKind.timeOrder, FIX.order);
        return;
    }
  }

  #checkIndex(position: number, value: number): void {
    const m = this.#mismatch;
    if (m) {
      if (position === m.position + 1) m.next = value;
      if (value === m.position) m.positionSeenLater = true;
      return;
    }
    if (Number.isNaN(value) || value === position) return;
    this.#mismatch = { position, value, positionSeenLater: false };
  }

  #classifyMismatch(): void {
    const m = this.#mismatch;
    if (!m) return;
    const { position: p, value: v } = m;
    const where = `${this.#log}:${p + 1}: entry ${p}`;
    let kind: VerifyFailureKind;
    let what: string;
    if (v < p) {
      kind = VerifyFailureKind.reordered;
      what = `has batonindex ${v}, which already appeared at line ${v + 1}: an entry was duplicated or moved`;
    } else if (m.positionSeenLater) {
      kind = VerifyFailureKind.reordered;
      what = `has batonindex ${v}, and entry ${p} appears later: entries were swapped or moved`;
    } else if (m.next === p + 1) {
      kind = VerifyFailureKind.edited;
      what = `has batonindex ${v} but the next line continues from ${p}: the index field was changed`;
    } else {
      kind = VerifyFailureKind.missing;
      what = `has batonindex ${v}: ${v - p === 1 ? `entry ${p} is` : `entries ${p} to ${v - 1} are`} missing`;
    }
    this.#failures.push({ kind, index: p, line: p + 1, message: `${where} ${what}; ${FIX.order}` });
  }

  #checkTime(position: number, recordedMs: number): void {
    if (Number.isNaN(recordedMs)) return;
    if (recordedMs < this.#lastRecordedMs && !this.#timeFailed) {
      this.#timeFailed = true;
      this.#failures.push({
        kind: VerifyFailureKind.timeOrder,
        index: position,
        line: position + 1,
        message:
          `${this.#log}:${position + 1}: entry ${position} was recorded at ${new Date(recordedMs).toISOString()}, before ` +
          `the entry above it (${new Date(this.#lastRecordedMs).toISOString()}); ${FIX.order}`,
      });
    }
    this.#lastRecordedMs = Math.max(this.#lastRecordedMs, recordedMs);
  }

  #rootFailures(): void {
    let lastGood = 0;
    const checks = this.#anchorChecks;
    for (const [i, c] of checks.entries()) {
      if (c.matches) {
        lastGood = c.anchor.size;
        continue;
      }
      // A failure inside the range already says where and what; the root mismatch is its consequence.
      const explained = this.#failures.some((f) => f.index !== undefined && f.index < c.anchor.size);
      if (explained) continue;
      const laterMatch = checks.slice(i + 1).find((l) => l.matches);
      if (laterMatch) {
        this.#failures.push({
          kind: VerifyFailureKind.inconsistent,
          index: lastGood,
          checkpoint: c.anchor.file,
          message:
            `checkpoint ${c.anchor.file} (size ${c.anchor.size}) contradicts checkpoint ${laterMatch.anchor.file}: ` +
            'both are signed but cannot both describe this log (a fork); find out who signed the older one',
        });
      } else {
        this.#failures.push({
          kind: VerifyFailureKind.edited,
          index: lastGood,
          line: lastGood + 1,
          checkpoint: c.anchor.file,
          message:
            `${this.#log}: entries ${lastGood} to ${c.anchor.size - 1} do not hash to the root signed in ${c.anchor.file}: ` +
            `an entry in that range was changed after it was checkpointed; ${FIX.edited}`,
        });
      }
    }
  }
}

/** Same-size anchors with different roots: a log signed two different histories. */
export function conflictingAnchors(anchors: readonly Anchor[]): VerifyFailure[] {
  const bySize = new Map<number, Anchor>();
  const failures: VerifyFailure[] = [];
  for (const a of anchors) {
    const seen = bySize.get(a.size);
    if (seen && !seen.root.equals(a.root)) {
      failures.push({
        kind: VerifyFailureKind.inconsistent,
        checkpoint: a.file,
        message: `checkpoints ${seen.file} and ${a.file} both claim size ${a.size} with different roots (a fork); find out who signed them`,
      });
    }
    bySize.set(a.size, seen ?? a);
  }
  return failures;
}
