import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { keepFailedStartLogs } from './failed-start-logs.js';

let base: string;
beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), 'failed-start-'));
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

async function bedWithLog(name: string): Promise<string> {
  const logDir = join(base, name, 'logs');
  await mkdir(logDir, { recursive: true });
  await writeFile(join(logDir, 'coredns.log'), `log of ${name}\n`);
  return logDir;
}

describe('keepFailedStartLogs', () => {
  it('keeps the logs and points the hint at the kept file', async () => {
    const logDir = await bedWithLog('b1');
    const err = new Error(`timed out waiting for CoreDNS; see ${join(logDir, 'coredns.log')}`);
    await keepFailedStartLogs(err, logDir, base, 'b1');
    await rm(join(base, 'b1'), { recursive: true });
    const kept = join(base, '.failed-starts', 'b1', 'coredns.log');
    expect(err.message).toBe(`timed out waiting for CoreDNS; see ${kept}`);
    expect(await readFile(kept, 'utf8')).toBe('log of b1\n');
  });

  it('names the kept folder when the error names no log, and keeps only the newest five', async () => {
    for (let i = 0; i < 6; i++) {
      const err = new Error('etcd exited');
      await keepFailedStartLogs(err, await bedWithLog(`b${i}`), base, `b${i}`);
      expect(err.message).toBe(`etcd exited (the bed's logs are kept in ${join(base, '.failed-starts', `b${i}`)})`);
      const when = new Date(Date.now() - (10 - i) * 60_000);
      await utimes(join(base, '.failed-starts', `b${i}`), when, when);
    }
    expect((await readdir(join(base, '.failed-starts'))).sort()).toEqual(['b1', 'b2', 'b3', 'b4', 'b5']);
  });
});
