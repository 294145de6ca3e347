import { writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTempDirs } from '../../../test/support/temp-dirs.js';
import { withFileLock } from './file-lock.js';

const tempDir = useTempDirs();

describe('withFileLock', () => {
  it('runs holders one at a time', async () => {
    const dir = tempDir('lock-');
    const lock = join(dir, 'x.lock');
    const order: string[] = [];
    const hold = (id: string) =>
      withFileLock(
        lock,
        async () => {
          order.push(`${id}+`);
          await new Promise((r) => setTimeout(r, 30));
          order.push(`${id}-`);
        },
        5,
      );
    await Promise.all([hold('a'), hold('b'), hold('c')]);
    for (let i = 0; i < order.length; i += 2) expect(order[i]!.slice(0, 1)).toBe(order[i + 1]!.slice(0, 1));
  });

  it('takes over a lock file whose holder process is gone', async () => {
    const dir = tempDir('lock-');
    const lock = join(dir, 'x.lock');
    // pid 2^22+1 is above Linux's pid_max default: certainly not running.
    await writeFile(lock, `${JSON.stringify({ pid: 4_194_305, host: hostname(), token: 't', since: '2026-12-07' })}\n`);
    await expect(withFileLock(lock, async () => 'ran', 5)).resolves.toBe('ran');
  });

  it('takes over a lock file whose holder pid now belongs to a newer process', async () => {
    const dir = tempDir('lock-');
    const lock = join(dir, 'x.lock');
    // Our own pid is alive; the recorded start time is not ours, as after the holder died and its pid was reused.
    const owner = { pid: process.pid, host: hostname(), token: 't', since: '2026-12-07', start: '1' };
    await writeFile(lock, `${JSON.stringify(owner)}\n`);
    await expect(withFileLock(lock, async () => 'ran', 5)).resolves.toBe('ran');
  });
});
