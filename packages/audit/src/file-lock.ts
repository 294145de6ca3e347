import { randomBytes } from 'node:crypto';
import { open, readFile, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { TimeoutError } from '@baton/errors';
import { isSameProcess, processStartTime } from './process-alive.js';

/** Options of {@link acquireFileLock}. */
export interface FileLockOptions {
  /** Give up after this long. @default 30_000 */
  readonly timeoutMs?: number;
  /** Cancels waiting. */
  readonly signal?: AbortSignal;
  /** Waits between attempts; injected so tests need not sleep. @default node:timers/promises setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Monotonic milliseconds, for the timeout. @default performance.now */
  readonly nowMs?: () => number;
}

/** A held lock. */
export interface FileLock {
  /** Releases the lock; a no-op if it was already released. */
  release(): Promise<void>;
}

interface LockOwner {
  readonly pid: number;
  readonly host: string;
  readonly token: string;
  /** Process start time (Linux clock ticks since boot), to notice a reused pid. */
  readonly start?: string;
  readonly since: string;
}

// A breaker is held for microseconds while a stale lock is removed; one older than this belongs to a dead process.
const BREAKER_STALE_MS = 10_000;
// A lock file whose owner line is unreadable is being written right now, or its writer died doing so.
const UNREADABLE_STALE_MS = 10_000;

/**
 * Takes a cross-process exclusive lock by creating `lockPath` with O_EXCL (no native module, works on any local
 * file system). A lock whose owner process is gone (same host, pid not running, or pid reused by a newer process)
 * is stale and is broken safely: a second O_EXCL "breaker" file makes sure only one waiter removes it, and it
 * re-reads the owner token before deleting so a fresh lock is never removed.
 * @throws {TimeoutError} after `timeoutMs`, naming the holder and how to clear a lock left behind.
 */
export async function acquireFileLock(lockPath: string, options: FileLockOptions = {}): Promise<FileLock> {
  const sleep = options.sleep ?? ((ms: number) => delay(ms, undefined, { signal: options.signal }));
  const nowMs = options.nowMs ?? (() => performance.now());
  const deadline = nowMs() + (options.timeoutMs ?? 30_000);
  const me: LockOwner = {
    pid: process.pid,
    host: hostname(),
    token: randomBytes(16).toString('hex'),
    since: new Date().toISOString(),
    ...processStartTime(process.pid),
  };
  for (let attempt = 0; ; attempt++) {
    options.signal?.throwIfAborted();
    if (await tryCreate(lockPath, `${JSON.stringify(me)}\n`)) return heldLock(lockPath, me.token);
    const holder = await readOwner(lockPath);
    if (holder !== undefined && (await isStale(lockPath, holder))) {
      await breakStaleLock(lockPath, holder);
      continue;
    }
    if (nowMs() >= deadline) {
      const who =
        holder && holder !== 'unreadable'
          ? `pid ${holder.pid} on ${holder.host} since ${holder.since}`
          : 'another process';
      throw new TimeoutError(
        `audit log lock ${lockPath} is held by ${who}; waited ${options.timeoutMs ?? 30_000} ms. ` +
          `If no baton process is appending to this log, delete ${lockPath}`,
        { details: { lockPath } },
      );
    }
    // Short backoff: appends hold the lock for a few fsyncs, so waiting long only adds latency.
    await sleep(Math.min(1 + attempt, 20));
  }
}

async function tryCreate(path: string, content: string): Promise<boolean> {
  let fh: Awaited<ReturnType<typeof open>>;
  try {
    fh = await open(path, 'wx', 0o644);
  } catch (err) {
    if ((err as { code?: unknown }).code === 'EEXIST') return false;
    throw err;
  }
  try {
    await fh.writeFile(content, 'utf8');
  } finally {
    await fh.close();
  }
  return true;
}

function heldLock(lockPath: string, token: string): FileLock {
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      const owner = await readOwner(lockPath);
      // Only remove our own lock: if it was (wrongly) broken and retaken, the new holder keeps it.
      if (owner !== undefined && owner !== 'unreadable' && owner.token === token)
        await unlink(lockPath).catch(() => {});
    },
  };
}

async function readOwner(path: string): Promise<LockOwner | 'unreadable' | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const owner = JSON.parse(text) as LockOwner;
    return typeof owner.pid === 'number' && typeof owner.token === 'string' ? owner : 'unreadable';
  } catch {
    return 'unreadable';
  }
}

async function isStale(path: string, holder: LockOwner | 'unreadable'): Promise<boolean> {
  if (holder === 'unreadable') return ageMs(path).then((age) => age > UNREADABLE_STALE_MS);
  // Another host's pid means nothing here (a shared file system): never break its lock.
  if (holder.host !== hostname()) return false;
  return !isSameProcess(holder.pid, holder.start);
}

async function breakStaleLock(lockPath: string, holder: LockOwner | 'unreadable'): Promise<void> {
  const breaker = `${lockPath}.break`;
  if (!(await tryCreate(breaker, `${process.pid}\n`))) {
    if ((await ageMs(breaker)) > BREAKER_STALE_MS) await unlink(breaker).catch(() => {});
    return;
  }
  try {
    const again = await readOwner(lockPath);
    const same =
      holder === 'unreadable'
        ? again === 'unreadable'
        : again !== undefined && again !== 'unreadable' && again.token === holder.token;
    if (same) await unlink(lockPath).catch(() => {});
  } finally {
    await unlink(breaker).catch(() => {});
  }
}

// File mtimes are wall-clock times, so this comparison has to use the wall clock too.
async function ageMs(path: string): Promise<number> {
  try {
    return Date.now() - (await stat(path)).mtimeMs;
  } catch {
    return 0;
  }
}
