import { mkdir, readFile, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { acquireFileLock, type FileLock, isProcessAlive } from '@baton/audit';

/**
 * Runs `fn` while holding @baton/audit's cross-process lock at `lockPath` (the audit log's), waiting as long as the
 * holder lives: a cold build holds it for minutes. A lock whose holder process is gone is taken over, so a crashed
 * build never wedges the cache.
 */
export async function withFileLock<T>(lockPath: string, fn: () => Promise<T>, pollMs = 200): Promise<T> {
  // The cache folder the lock guards may not exist yet on a fresh machine.
  await mkdir(dirname(lockPath), { recursive: true });
  let lock: FileLock;
  for (;;) {
    await outwaitDirectoryLock(lockPath, pollMs);
    try {
      lock = await acquireFileLock(lockPath, { timeoutMs: Number.POSITIVE_INFINITY, sleep: () => sleep(pollMs) });
      break;
    } catch (err) {
      // An older bed took its directory lock between the wait and the attempt: wait it out again.
      if ((err as NodeJS.ErrnoException).code !== 'EISDIR') throw err;
    }
  }
  try {
    return await fn();
  } finally {
    await lock.release();
  }
}

// Before 2026-12-07 the bed's locks were directories holding a `pid` file. One held by a running older bed is waited
// out; one left by a killed process (which would stop every later build: a lock file cannot be created over it) is
// removed once its holder is gone, as it was then.
async function outwaitDirectoryLock(lockPath: string, pollMs: number): Promise<void> {
  while ((await stat(lockPath).catch(() => undefined))?.isDirectory()) {
    const holder = Number.parseInt(await readFile(join(lockPath, 'pid'), 'utf8').catch(() => ''), 10);
    if (Number.isFinite(holder) && !isProcessAlive(holder)) await rm(lockPath, { recursive: true, force: true });
    else await sleep(pollMs);
  }
}
