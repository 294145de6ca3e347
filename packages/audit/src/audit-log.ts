// The one writer of an audit log: appends under a file lock, signs checkpoints, and repairs what a crash left. Over
// 400 lines on purpose: the repair scan's private methods share the open file handle, the lock and the tree state, which
// a split would have to expose.
import { type FileHandle, mkdir, open, stat, truncate } from 'node:fs/promises';
import { dirname } from 'node:path';
import { AuditVerifyError, ConfigError } from '@baton/errors';
import { checkEntry, EntryProblem } from './check-entry.js';
import { formatCheckpoint, isValidOrigin } from './checkpoint.js';
import {
  checkpointsDir,
  listCheckpoints,
  readCheckpointFile,
  removeStaleTempFiles,
  writeCheckpoint,
} from './checkpoint-store.js';
import { acquireFileLock } from './file-lock.js';
import { describeFsError } from './fs-error.js';
import { type HandoffEvent, HandoffEventSchema, serializeEntry } from './handoff-event.js';
import { forEachLine, readLineBlocks } from './line-blocks.js';
import { hashLeaf, MerkleFrontier } from './merkle-tree.js';
import { parseLogLine } from './parse-entry.js';
import { formatPath } from './parse-yaml.js';
import { signNote } from './signed-note.js';
import type { Signer } from './signing-key.js';
import { isKeyValidAt, type TrustedKey, TrustedKeySet } from './trusted-keys.js';
import { verifyCheckpointNote } from './verify-checkpoint.js';

/** Where a writer is in the log: entries, bytes, the tree's right edge, and the last recordedtime. */
interface TreeState {
  readonly size: number;
  readonly bytes: number;
  readonly frontier: MerkleFrontier;
  readonly lastRecordedMs: number;
}

/** The newest checkpoint, after its signature verified with a trusted key. */
interface NewestCheckpoint {
  readonly size: number;
  readonly root: Buffer;
  readonly file: string;
  readonly signedBy: readonly TrustedKey[];
}

/** Options of {@link AuditLog.open}. */
export interface AuditLogOptions {
  /** The log's identity on every checkpoint, e.g. `example.com/baton/audit`. Must match an existing log's. */
  readonly origin: string;
  /** Signs checkpoints; several during a key rotation overlap (each adds a signature line). */
  readonly signer: Signer | readonly Signer[];
  /** Clock for `recordedtime`. @default () => new Date() */
  readonly now?: () => Date;
  /** How long to wait for another process's append. @default 30_000 */
  readonly lockTimeoutMs?: number;
  /** Cancels waiting for the lock. */
  readonly signal?: AbortSignal;
  /** Waits between lock attempts; injected for tests. @default node:timers/promises setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
  /**
   * Keys the writer checks what it did not write itself against, as `verifyLog` does: the newest checkpoint's
   * signature, and the DSSE signature of every entry it adopts after that checkpoint (another writer's, or one a
   * crashed append left). Needed when other writers sign with other keys, or after a key rotation without overlap.
   * Its origin must be `origin`. @default the signers' own keys, with no validity window
   */
  readonly trustedKeys?: TrustedKeySet;
}

/** The outcome of an append: where the entries went and the checkpoint that now covers them. */
export interface AppendResult {
  /** Index of the first appended entry. */
  readonly firstIndex: number;
  /** Entries appended. */
  readonly count: number;
  /** Tree size after the append (= entries in the log). */
  readonly treeSize: number;
  /** RFC 6962 root after the append, hex. */
  readonly root: string;
  /** The signed checkpoint file covering the new entries. */
  readonly checkpoint: string;
}

/** What {@link AuditLog.open} (or an append) had to repair after an earlier crash. */
export interface RepairReport {
  /** Complete, valid entries a crashed writer appended but never checkpointed; now checkpointed. */
  readonly adoptedEntries: number;
  /** Bytes of a torn trailing line that no checkpoint covered; removed. */
  readonly removedBytes: number;
}

/**
 * An append-only audit log: JSON Lines whose bytes are the leaves of an RFC 6962 Merkle tree, with a signed C2SP
 * tlog-checkpoint written after every append into `<log>.checkpoints/` (older checkpoints are kept).
 *
 * Safe for several writers: every append takes a cross-process lock, catches up with what other writers
 * appended, writes whole lines in one write, fsyncs, then writes the checkpoint atomically. An append resolves
 * only after both are durable. After a crash, the next open (or append) finds a torn trailing line that no
 * checkpoint covers and removes it; complete entries left uncheckpointed are verified (schema, index, time order and
 * DSSE signature by a trusted key) and checkpointed. Nothing a checkpoint covers is ever rewritten: if the log no
 * longer matches its newest checkpoint, writing stops with an {@link AuditVerifyError}.
 *
 * The writer signs a checkpoint only over bytes it has checked: on open it re-hashes the whole checkpointed prefix
 * against the newest checkpoint (whose signature it verifies), and it verifies every entry it adopts. Only what this
 * instance wrote or checked is kept in memory between appends. Cost: one read and SHA-256 of the whole log per open
 * (bench:audit `openAppendOneSeconds`: 0.7 s for 20,000 events, 88 MB, on the shared 2-core machine), which is the
 * floor of reading those bytes; a cache on disk could only say what the file held when the cache was written.
 * A writer that appends often keeps one instance open and pays it once.
 */
export class AuditLog {
  /** The log file. */
  readonly path: string;
  /** The checkpoint origin. */
  readonly origin: string;
  readonly #signers: readonly Signer[];
  readonly #keys: TrustedKeySet;
  readonly #options: AuditLogOptions;
  readonly #fh: FileHandle;
  #state: TreeState | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #repair: RepairReport = { adoptedEntries: 0, removedBytes: 0 };

  private constructor(path: string, options: AuditLogOptions, fh: FileHandle, keys: TrustedKeySet) {
    this.path = path;
    this.origin = options.origin;
    this.#signers = Array.isArray(options.signer) ? (options.signer as readonly Signer[]) : [options.signer as Signer];
    this.#keys = keys;
    this.#options = options;
    this.#fh = fh;
  }

  /**
   * Opens (or creates) a log for appending, repairing what a crashed writer left behind.
   * @throws {ConfigError} for a bad origin, no signer, trusted keys of another origin, a missing folder, or a log
   * that belongs to another origin.
   * @throws {AuditVerifyError} when the log does not match its newest checkpoint (it was edited or cut), the newest
   * checkpoint is not signed by a trusted key, or an entry after it does not verify: nothing is written or signed.
   * @throws {TimeoutError} when another writer holds the lock for longer than `lockTimeoutMs`.
   */
  static async open(path: string, options: AuditLogOptions): Promise<AuditLog> {
    if (!isValidOrigin(options.origin)) {
      throw new ConfigError(`audit log origin "${options.origin}" must be a non-empty line without surrounding spaces`);
    }
    const signers = Array.isArray(options.signer) ? options.signer : [options.signer];
    if (signers.length === 0)
      throw new ConfigError(`audit log ${path}: at least one signing key is needed to write checkpoints`);
    const keys =
      options.trustedKeys ??
      new TrustedKeySet({ origin: options.origin, keys: signers.map((s) => ({ key: s.verifierKey })) });
    if (keys.origin !== options.origin) {
      throw new ConfigError(
        `audit log ${path}: the trusted keys are for origin "${keys.origin}", not "${options.origin}"; pass the trusted-keys file of this log`,
      );
    }
    let fh: FileHandle;
    try {
      fh = await open(path, 'a', 0o644);
      await mkdir(checkpointsDir(path), { recursive: true });
    } catch (err) {
      throw new ConfigError(
        `cannot open audit log ${path} for appending: ${describeFsError(err)}; check that ${dirname(path)} exists and is writable`,
        { cause: err },
      );
    }
    const log = new AuditLog(path, options, fh, keys);
    try {
      await log.#locked(async () => {
        await removeStaleTempFiles(path);
        await log.#sync();
      });
    } catch (err) {
      await fh.close();
      throw err;
    }
    return log;
  }

  /** Entries in the log as of the last open or append by this instance. */
  get size(): number {
    return this.#state?.size ?? 0;
  }

  /** What the last open or append had to repair (zeros when nothing). */
  get repair(): RepairReport {
    return this.#repair;
  }

  /**
   * Appends one event (see {@link AuditLog.appendMany}).
   * @throws {ConfigError} when the event is not a valid handoff event.
   */
  append(event: HandoffEvent): Promise<AppendResult> {
    return this.appendMany([event]);
  }

  /**
   * Appends events in order under one lock, one write, one fsync and one checkpoint. Resolves when the entries and
   * the checkpoint are durable. Concurrent calls on one instance run one after another.
   * @throws {ConfigError} when an event is not a valid handoff event (naming its position and field).
   * @throws {AuditVerifyError} when the log was changed under the writer (see {@link AuditLog.open}).
   */
  appendMany(events: readonly HandoffEvent[]): Promise<AppendResult> {
    for (const [i, event] of events.entries()) {
      const parsed = HandoffEventSchema.safeParse(event);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        return Promise.reject(
          new ConfigError(
            `event[${i}].${formatPath(issue.path)}: ${issue.message}; create events with createHandoffEvent`,
          ),
        );
      }
    }
    if (events.length === 0) return Promise.reject(new ConfigError('appendMany needs at least one event'));
    const run = this.#queue.then(() => this.#locked(() => this.#appendLocked(events)));
    this.#queue = run.catch(() => {});
    return run;
  }

  /** Closes the log file. Further appends fail. */
  async close(): Promise<void> {
    await this.#queue;
    await this.#fh.close();
  }

  async #locked<T>(fn: () => Promise<T>): Promise<T> {
    const lock = await acquireFileLock(`${this.path}.lock`, {
      ...(this.#options.lockTimeoutMs !== undefined ? { timeoutMs: this.#options.lockTimeoutMs } : {}),
      ...(this.#options.signal ? { signal: this.#options.signal } : {}),
      ...(this.#options.sleep ? { sleep: this.#options.sleep } : {}),
    });
    try {
      return await fn();
    } finally {
      await lock.release();
    }
  }

  async #appendLocked(events: readonly HandoffEvent[]): Promise<AppendResult> {
    const state = await this.#sync();
    const now = (this.#options.now ?? (() => new Date()))().getTime();
    let last = state.lastRecordedMs;
    const lines = events.map((event, k) => {
      // Never earlier than the entry above or the event itself: recordedtime must not go backwards.
      last = Math.max(now, last, Date.parse(event.time));
      return serializeEntry(event, state.size + k, new Date(last).toISOString());
    });
    const bytes = Buffer.from(`${lines.join('\n')}\n`, 'utf8');
    // If anything below fails, the next call re-reads the log from disk instead of trusting memory.
    this.#state = undefined;
    let written = 0;
    while (written < bytes.length) {
      written += (await this.#fh.write(bytes, written, bytes.length - written)).bytesWritten;
    }
    await this.#fh.datasync();
    const frontier = state.frontier.clone();
    forEachLine(bytes, (start, end) => frontier.append(hashLeaf(bytes.subarray(start, end))));
    const next: TreeState = {
      size: state.size + events.length,
      bytes: state.bytes + bytes.length,
      frontier,
      lastRecordedMs: last,
    };
    const checkpoint = await this.#checkpoint(next);
    this.#state = next;
    this.#repair = { adoptedEntries: 0, removedBytes: 0 };
    return {
      firstIndex: state.size,
      count: events.length,
      treeSize: next.size,
      root: frontier.root().toString('hex'),
      checkpoint,
    };
  }

  async #checkpoint(state: TreeState): Promise<string> {
    const body = formatCheckpoint({ origin: this.origin, size: state.size, root: state.frontier.root() });
    return writeCheckpoint(this.path, state.size, await signNote(body, this.#signers));
  }

  /**
   * Brings the in-memory state up to date with the file (under the lock): catches up with other writers, checks
   * the newest checkpoint, adopts complete uncheckpointed entries, removes a torn tail, and checkpoints if needed.
   * Without a state of its own (on open, or after a failed append) it reads the log from its first byte.
   */
  async #sync(): Promise<TreeState> {
    const newest = await this.#newestCheckpoint();
    const fileBytes = (await stat(this.path)).size;
    const known = this.#state;
    if (known && (fileBytes < known.bytes || (newest && newest.size < known.size))) {
      throw new AuditVerifyError(
        `audit log ${this.path} shrank or lost checkpoints while open (now ${fileBytes} bytes, newest checkpoint ` +
          `${newest?.size ?? 'none'}); something other than baton changed it; run \`baton audit verify\` before appending`,
      );
    }
    if (!newest && fileBytes > 0) {
      // The first open signs an empty checkpoint before anything is appended: entries without one lost theirs.
      throw new AuditVerifyError(
        `audit log ${this.path} has ${fileBytes} bytes of entries but no checkpoint in ${checkpointsDir(this.path)}: ` +
          'the checkpoints were removed; restore the folder from a backup (a writer never deletes checkpoints) before appending',
      );
    }
    const start = known ?? { size: 0, bytes: 0, frontier: new MerkleFrontier(), lastRecordedMs: 0 };
    const scanned = await this.#scan(start, fileBytes, newest);
    if (scanned.adopted > 0 || !newest) await this.#checkpoint(scanned.state);
    this.#repair = { adoptedEntries: scanned.adopted, removedBytes: scanned.removedBytes };
    this.#state = scanned.state;
    return scanned.state;
  }

  // The newest checkpoint, verified as `verifyLog` verifies one: origin, and a good signature by a trusted key.
  async #newestCheckpoint(): Promise<NewestCheckpoint | undefined> {
    const stored = await listCheckpoints(this.path);
    const latest = stored.at(-1);
    if (!latest) return undefined;
    const verdict = verifyCheckpointNote(await readCheckpointFile(latest.path), this.#keys);
    if (!verdict.ok && verdict.kind === 'origin-mismatch') {
      throw new ConfigError(
        `audit log ${this.path} belongs to origin "${verdict.checkpoint?.origin}", not "${this.origin}"; open it with its own origin or use another file`,
      );
    }
    if (!verdict.ok) {
      const fix =
        verdict.kind === 'unknown-key'
          ? 'if you trust the key that signed it, pass it in trustedKeys (the trusted-keys file of this log); otherwise treat the checkpoint as forged'
          : 'treat the checkpoint as forged or damaged';
      throw new AuditVerifyError(
        `checkpoint ${latest.path} ${verdict.reason}; ${fix}: run \`baton audit verify\` before appending`,
        { details: { log: this.path, checkpoint: latest.path } },
      );
    }
    if (verdict.checkpoint.size !== latest.size) {
      throw new AuditVerifyError(
        `checkpoint ${latest.path} is named for size ${latest.size} but says ${verdict.checkpoint.size}; it was renamed or replaced: run \`baton audit verify\` before appending`,
      );
    }
    return { size: latest.size, root: verdict.checkpoint.root, file: latest.path, signedBy: verdict.signedBy };
  }

  /**
   * Reads from `state.bytes` to the end. Lines inside the newest checkpoint are only hashed (its root is then
   * compared); lines after it must be entries that verify with a trusted key, at the right index and in time order,
   * and are adopted; a torn last line is cut off. Anything else stops the writer before it signs.
   */
  async #scan(
    start: TreeState,
    fileBytes: number,
    newest: NewestCheckpoint | undefined,
  ): Promise<{ state: TreeState; adopted: number; removedBytes: number }> {
    const frontier = start.frontier.clone();
    let bytes = start.bytes;
    let lastRecordedMs = start.lastRecordedMs;
    let adopted = 0;
    let removedBytes = 0;
    let lastCovered: Buffer | undefined;
    const checkRoot = () => {
      if (newest && frontier.size === newest.size && !frontier.root().equals(newest.root)) {
        throw new AuditVerifyError(
          `audit log ${this.path} does not match checkpoint ${newest.file}: the first ${newest.size} entries were changed ` +
            'after they were checkpointed; run `baton audit verify` to find where, and restore the log before appending',
        );
      }
    };
    checkRoot();
    for await (const block of readLineBlocks(this.path, { start: bytes, end: fileBytes })) {
      if (block.type === 'oversized' || block.type === 'torn') {
        const line = frontier.size + 1;
        if (newest && frontier.size < newest.size) {
          throw new AuditVerifyError(
            `audit log ${this.path}:${line}: ends in a damaged line inside what checkpoint ${newest.file} covers; ` +
              'run `baton audit verify` and restore the log from a copy that verifies',
          );
        }
        // A torn last line that no checkpoint covers: the append that wrote it never reported success.
        await truncate(this.path, bytes);
        await this.#fh.datasync();
        removedBytes = fileBytes - bytes;
        break;
      }
      const buf = block.bytes;
      forEachLine(buf, (s, e) => {
        const line = buf.subarray(s, e);
        const position = frontier.size;
        if (!newest || position >= newest.size) {
          if (adopted === 0 && lastCovered) lastRecordedMs = this.#checkCovered(lastCovered, newest);
          lastRecordedMs = this.#adoptable(line, position, lastRecordedMs, newest?.size ?? 0);
          adopted++;
        } else {
          lastCovered = line;
        }
        frontier.append(hashLeaf(line));
        bytes += e - s + 1;
        checkRoot();
      });
    }
    if (newest && frontier.size < newest.size) {
      throw new AuditVerifyError(
        `audit log ${this.path} has ${frontier.size} entries but checkpoint ${newest.file} covers ${newest.size}: ` +
          'entries were cut off; restore them from a copy that verifies before appending',
      );
    }
    if (adopted === 0 && lastCovered) lastRecordedMs = this.#checkCovered(lastCovered, newest);
    return { state: { size: frontier.size, bytes, frontier, lastRecordedMs }, adopted, removedBytes };
  }

  // The last entry a checkpoint covers gives its recordedtime, at which a key that signed the checkpoint must be
  // valid (as `verifyLog` checks); returns that time.
  #checkCovered(line: Buffer, newest: NewestCheckpoint | undefined): number {
    const parsed = parseLogLine(line);
    const recordedMs = 'problem' in parsed ? Number.NaN : Date.parse(parsed.entry.recordedtime);
    if (newest && !Number.isNaN(recordedMs) && !newest.signedBy.some((k) => isKeyValidAt(k, recordedMs))) {
      throw new AuditVerifyError(
        `checkpoint ${newest.file} is signed by ${newest.signedBy.map((k) => k.name).join(', ')}, which the trusted keys ` +
          `do not trust at ${new Date(recordedMs).toISOString()} (when its last entry was recorded); extend the key's ` +
          'validity window in trustedKeys if that is right, else run `baton audit verify` before appending',
      );
    }
    return Number.isNaN(recordedMs) ? 0 : recordedMs;
  }

  // Returns the entry's recordedtime, or stops the writer: a complete line after the checkpoint must be an entry
  // that verifies as `verifyLog` would verify it, or the next checkpoint would vouch for a forgery.
  #adoptable(line: Buffer, position: number, previousRecordedMs: number, checkpointed: number): number {
    const check = checkEntry(line, this.#keys);
    const problem =
      check.problem?.message ??
      (check.index !== position
        ? `has batonindex ${check.index}, expected ${position}`
        : check.recordedMs! < previousRecordedMs
          ? `was recorded at ${new Date(check.recordedMs!).toISOString()}, before the entry above it`
          : undefined);
    if (problem === undefined) return check.recordedMs!;
    const fix =
      check.problem?.kind === EntryProblem.unknownKey
        ? 'if you trust that key, pass it in trustedKeys (the trusted-keys file of this log); otherwise treat the entry as forged'
        : 'treat the entry as forged or damaged';
    throw new AuditVerifyError(
      `audit log ${this.path}:${position + 1}: entry ${position} ${problem}; no checkpoint covers it and none was signed ` +
        `over it: ${fix}, run \`baton audit verify\`, and move the damaged log aside or cut it back to its first ${checkpointed} ` +
        'lines (what the newest checkpoint covers) before appending',
      { details: { log: this.path, index: position, line: position + 1 } },
    );
  }
}
