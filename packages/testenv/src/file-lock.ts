import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { acquireFileLock } from '@baton/audit';

/**
 * Runs `fn` while holding @baton/audit's cross-process lock at `lockPath` (the audit log's), waiting as long as the
 * holder lives: a cold build holds it for minutes. A lock whose holder process is gone is taken over, so a crashed
 * build never wedges the cache.
 */
export async function withFileLock<T>(lockPath: string, fn: () => Promise<T>, pollMs = 200): Promise<T> {
  // The cache folder the lock guards may not exist yet on a fresh machine.
  await mkdir(dirname(lockPath), { recursive: true });
  const lock = await acquireFileLock(lockPath, { timeoutMs: Number.POSITIVE_INFINITY, sleep: () => sleep(pollMs) });
  try {
    return await fn();
  } finally {
    await lock.release();
  }
}
