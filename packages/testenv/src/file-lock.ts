import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isAlive } from './is-alive.js';

// A second file lock beside @baton/audit's acquireFileLock, on purpose: the test bed depends on no product package
// (it builds and runs what tests the product, and `baton testenv` works before any product code is built), and it
// only guards build caches and cluster names, where waiting for a dead holder's pid is enough.

/**
 * Runs `fn` while holding a cross-process lock (a directory made atomically by mkdir). A lock whose
 * holder process is gone is taken over, so a crashed build never wedges the cache.
 */
export async function withFileLock<T>(lockDir: string, fn: () => Promise<T>, pollMs = 200): Promise<T> {
  // The cache folder the lock guards may not exist yet on a fresh machine.
  await mkdir(dirname(lockDir), { recursive: true });
  for (;;) {
    try {
      await mkdir(lockDir);
      await writeFile(`${lockDir}/pid`, String(process.pid));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number.parseInt(await readFile(`${lockDir}/pid`, 'utf8').catch(() => ''), 10);
      if (Number.isFinite(holder) && !isAlive(holder)) {
        await rm(lockDir, { recursive: true, force: true });
        continue;
      }
      await sleep(pollMs);
    }
  }
  try {
    return await fn();
  } finally {
    await rm(lockDir, { recursive: true, force: true });
  }
}
