import { stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { ConfigError } from '@baton/errors';
import { type ChunkResult, checkChunk } from './check-chunk.js';
import { checkpointsDir, listCheckpoints, readCheckpointFile } from './checkpoint-store.js';
import { ChunkWorkerPool } from './chunk-worker-pool.js';
import { describeFsError } from './fs-error.js';
import { readLineBlocks } from './line-blocks.js';
import { type Anchor, conflictingAnchors, LogSequencer } from './log-sequencer.js';
import { isKeyValidAt, type TrustedKeySet } from './trusted-keys.js';
import { verifyCheckpointNote } from './verify-checkpoint.js';
import { type VerifyFailure, VerifyFailureKind, type VerifyResult } from './verify-result.js';

/** Options of {@link verifyLog}. */
export interface VerifyLogOptions {
  /**
   * Worker threads that check signatures and hash lines; 0 checks in the calling thread.
   * @default 0 for logs under 1 MiB (a thread costs more than it saves), else min(2, available cores)
   */
  readonly workers?: number;
  /**
   * Checkpoints kept elsewhere (e.g. a reviewer's copy from last month), as paths. Each must be consistent with
   * the log: this is what catches a log cut back together with its newest checkpoints.
   */
  readonly extraCheckpoints?: readonly string[];
  /** Cancels verification. */
  readonly signal?: AbortSignal;
}

const MAX_REPORTED_FAILURES = 100;
const SMALL_LOG_BYTES = 1 << 20;

/**
 * Verifies an audit log end to end: every line's schema and DSSE signature (by a trusted key within its validity
 * window), the envelope against the signed statement, batonindex and recordedtime order, the RFC 6962 root of
 * every kept checkpoint against the log (which proves each is consistent with the newest), and each checkpoint's
 * signature and origin. Streams the file, so memory stays flat for any log size.
 *
 * Hostile content never throws: it is reported in the result with the first failing index and its kind.
 * @throws {ConfigError} when the log file itself cannot be read (missing, permission denied).
 */
export async function verifyLog(
  logPath: string,
  keys: TrustedKeySet,
  options: VerifyLogOptions = {},
): Promise<VerifyResult> {
  const logBytes = await logSize(logPath);
  const {
    anchors,
    failures: checkpointFailures,
    files,
  } = await loadAnchors(logPath, keys, options.extraCheckpoints ?? []);
  const sequencer = new LogSequencer(logPath, anchors);
  const workers = options.workers ?? (logBytes < SMALL_LOG_BYTES ? 0 : Math.min(2, availableParallelism()));
  const tail = await checkLines(logPath, logBytes, keys, sequencer, workers, options.signal);
  const finished = sequencer.finish(tail);
  const all = [
    ...checkpointFailures,
    ...conflictingAnchors(anchors),
    ...keyWindowFailures(finished.anchorChecks),
    ...finished.failures,
  ];
  if (anchors.length === 0 && !all.some((f) => f.checkpoint !== undefined)) all.unshift(checkpointMissing(logPath));
  const sorted = sortFailures(all);
  const newest = anchors.reduce<Anchor | undefined>((a, b) => (a && a.size >= b.size ? a : b), undefined);
  return {
    ok: sorted.length === 0,
    log: logPath,
    origin: keys.origin,
    entries: sequencer.size,
    checkpointFiles: files,
    trustedCheckpoints: anchors.length,
    checkpointedSize: newest?.size ?? 0,
    root: newest?.root.toString('hex'),
    uncheckpointedEntries: Math.max(0, sequencer.size - (newest?.size ?? 0)),
    failures: sorted.slice(0, MAX_REPORTED_FAILURES),
    failureCount: sorted.length + finished.droppedFailures,
    warnings: finished.warnings,
  };
}

/** @throws {ConfigError} when the log is missing, unreadable or not a file. */
async function logSize(logPath: string): Promise<number> {
  try {
    const info = await stat(logPath);
    if (!info.isFile()) throw Object.assign(new Error('not a file'), { code: 'EISDIR' });
    return info.size;
  } catch (err) {
    throw new ConfigError(`cannot read audit log ${logPath}: ${describeFsError(err)}; pass the path of a .jsonl log`, {
      cause: err,
    });
  }
}

type LogTail = { torn?: { line: number }; oversized?: { line: number } };

/**
 * Checks every complete line (on `workers` threads, or in this one for 0) and feeds the results to the sequencer in
 * log order; returns what the log ends with when that is not a complete line.
 */
async function checkLines(
  logPath: string,
  logBytes: number,
  keys: TrustedKeySet,
  sequencer: LogSequencer,
  workers: number,
  signal: AbortSignal | undefined,
): Promise<LogTail> {
  const pool = workers > 0 ? ChunkWorkerPool.start(workers, keys.toFile()) : undefined;
  const tail: LogTail = {};
  try {
    const inFlight: Promise<ChunkResult>[] = [];
    // Enough blocks in flight to keep every worker busy, few enough that memory stays flat.
    const maxInFlight = Math.max(1, workers * 3);
    for await (const block of readLineBlocks(logPath, { end: logBytes })) {
      signal?.throwIfAborted();
      if (block.type === 'lines') {
        inFlight.push(pool ? pool.run(block.bytes) : Promise.resolve(checkChunk(block.bytes, keys)));
        while (inFlight.length >= maxInFlight) sequencer.accept(await inFlight.shift()!);
        continue;
      }
      while (inFlight.length > 0) sequencer.accept(await inFlight.shift()!);
      // All lines before the tail are in the sequencer now, so its size is the tail's index.
      if (block.type === 'torn') tail.torn = { line: sequencer.size + 1 };
      else tail.oversized = { line: sequencer.size + 1 };
    }
    while (inFlight.length > 0) sequencer.accept(await inFlight.shift()!);
  } finally {
    await pool?.close();
  }
  return tail;
}

/** Checkpoints signed by a key that was not valid when their last entry was recorded. */
function keyWindowFailures(anchorChecks: ReturnType<LogSequencer['finish']>['anchorChecks']): VerifyFailure[] {
  return anchorChecks
    .filter((c) => !Number.isNaN(c.lastRecordedMs) && !c.anchor.signedBy.some((k) => isKeyValidAt(k, c.lastRecordedMs)))
    .map(
      (c): VerifyFailure => ({
        kind: VerifyFailureKind.unknownKey,
        checkpoint: c.anchor.file,
        message:
          `checkpoint ${c.anchor.file} is signed by ${c.anchor.signedBy.map((k) => k.name).join(', ')}, which the trusted-keys ` +
          `file does not trust at ${new Date(c.lastRecordedMs).toISOString()} (when its last entry was recorded); ` +
          'extend the key\u2019s validity window if that is right',
      }),
    );
}

function checkpointMissing(logPath: string): VerifyFailure {
  return {
    kind: VerifyFailureKind.checkpointMissing,
    message:
      `${logPath}: no checkpoint found in ${checkpointsDir(logPath)}: without a signed checkpoint nothing shows the log is ` +
      'complete and unedited; restore the checkpoints folder from a backup (a writer never deletes checkpoints)',
  };
}

async function loadAnchors(
  logPath: string,
  keys: TrustedKeySet,
  extra: readonly string[],
): Promise<{ anchors: Anchor[]; failures: VerifyFailure[]; files: number }> {
  const stored = await listCheckpoints(logPath).catch(() => []);
  const anchors: Anchor[] = [];
  const failures: VerifyFailure[] = [];
  const candidates = [
    ...stored.map((s) => ({ path: s.path, nameSize: s.size as number | undefined })),
    ...extra.map((path) => ({ path, nameSize: undefined })),
  ];
  for (const { path, nameSize } of candidates) {
    let bytes: Buffer;
    try {
      bytes = await readCheckpointFile(path);
    } catch (err) {
      failures.push({
        kind: VerifyFailureKind.corrupt,
        checkpoint: path,
        message: `cannot read checkpoint ${path}: ${describeFsError(err)}`,
      });
      continue;
    }
    const verdict = verifyCheckpointNote(bytes, keys);
    if (!verdict.ok) {
      const fix =
        verdict.kind === 'origin-mismatch'
          ? 'verify with the trusted-keys file of that log, or check that this is the log you meant'
          : verdict.kind === 'unknown-key'
            ? 'add the signing key to the trusted-keys file if you trust it'
            : 'treat the checkpoint as forged or damaged';
      failures.push({ kind: verdict.kind, checkpoint: path, message: `checkpoint ${path} ${verdict.reason}; ${fix}` });
      continue;
    }
    if (nameSize !== undefined && verdict.checkpoint.size !== nameSize) {
      failures.push({
        kind: VerifyFailureKind.corrupt,
        checkpoint: path,
        message: `checkpoint ${path} is named for size ${nameSize} but says ${verdict.checkpoint.size}; it was renamed or replaced`,
      });
      continue;
    }
    anchors.push({
      file: path,
      size: verdict.checkpoint.size,
      root: verdict.checkpoint.root,
      signedBy: verdict.signedBy,
    });
  }
  return { anchors, failures, files: candidates.length };
}

// Checkpoint-level failures (about the trust anchors) first, then entry failures by index.
function sortFailures(failures: VerifyFailure[]): VerifyFailure[] {
  const rank = (f: VerifyFailure) => (f.index === undefined ? -1 : f.index);
  return failures
    .map((f, i) => ({ f, i }))
    .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
    .map(({ f }) => f);
}
