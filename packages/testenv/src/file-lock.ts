import { mkdir, readFile, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { acquireFileLock, isProcessAlive } from '@baton/audit';

/**
 * Runs `fn` while holding @baton/audit's cross-process lock at `lockPath` (the audit log's), waiting as long as the
 * holder lives: a cold build holds it for minutes. A lock whose holder process is gone is taken over, so a crashed
 * build never wedges the cache.
 */
export async function withFileLock<T>(lockPath: string, fn: () => Promise<T>, pollMs = 200): Promise<T> {
  // The cache folder the lock guards may not exist yet on a fresh machine.
  await mkdir(dirname(lockPath), { recursive: true });
  await removeDeadDirectoryLock(lockPath);
  const lock = await acquireFileLock(lockPath, { timeoutMs: Number.POSITIVE_INFINITY, sleep: () => sleep(pollMs) });
  try {
    return await fn();
  } finally {
    await lock.release();
  }
}

// Before 2026-12-07 the bed's locks were directories holding a `pid` file; one left by a killed process would stop
// every later build (a lock file cannot be created over it). Removed when its holder is gone, as it was then.
async function removeDeadDirectoryLock(lockPath: string): Promise<void> {
  if (!(await stat(lockPath).catch(() => undefined))?.isDirectory()) return;
  const holder = Number.parseInt(await readFile(join(lockPath, 'pid'), 'utf8').catch(() => ''), 10);
  if (!Number.isFinite(holder) || !isProcessAlive(holder)) await rm(lockPath, { recursive: true, force: true });
}
