import { type ChildProcess, spawn } from 'node:child_process';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AuditLog, checkpointsDir, listCheckpoints, verifyLog } from '@baton/audit';
import { pollUntil } from '@baton/testenv';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { fixtureKey, fixtureKeyFile, fixtureTrustedKeys, ROOT, readLines, removeDir, tempDir } from './helpers.js';

const CHILD = join(ROOT, 'test/integration/audit/append-child.ts');
let dir: string;
let keyFile: string;

function startWriter(log: string, count: number, seed: number, mode?: 'forever'): ChildProcess {
  return spawn(
    process.execPath,
    [
      '--conditions=@baton/source',
      '--import',
      'tsx',
      CHILD,
      log,
      keyFile,
      String(count),
      String(seed),
      ...(mode ? [mode] : []),
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stderr })));
}

beforeAll(async () => {
  dir = await tempDir();
  keyFile = await fixtureKeyFile(dir);
});

afterAll(() => removeDir(dir));

describe('concurrent writers', () => {
  test('4 processes appending 1,000 events each give 4,000 whole entries that all verify', async () => {
    const log = join(dir, 'concurrent.jsonl');
    const children = [1, 2, 3, 4].map((seed) => startWriter(log, 1000, seed));
    const results = await Promise.all(children.map(exited));
    for (const r of results) expect(r, r.stderr).toMatchObject({ code: 0 });
    const lines = await readLines(log);
    expect(lines).toHaveLength(4000);
    // Every writer's events are all there, whole and in that writer's order.
    const runIds = lines.map((l) => JSON.parse(l).id as string);
    expect(new Set(runIds).size).toBe(4000);
    const result = await verifyLog(log, await fixtureTrustedKeys(), { workers: 2 });
    expect(result).toMatchObject({ ok: true, entries: 4000, checkpointedSize: 4000, failureCount: 0 });
    // One checkpoint per append, all kept, so any two can be shown consistent.
    expect(result.trustedCheckpoints).toBeGreaterThan(400);
    expect(await readdir(dir)).not.toContain('concurrent.jsonl.lock');
  });
});

describe('a writer killed in the middle of an append', () => {
  test('the next open repairs the log; nothing checkpointed is lost; it verifies and takes appends again', async () => {
    const log = join(dir, 'crash.jsonl');
    const child = startWriter(log, 0, 7, 'forever');
    const done = exited(child);
    // Let a few batches land, then kill -9 at whatever point the writer is in.
    await pollUntil(
      async () => (((await stat(log).catch(() => undefined))?.size ?? 0) > 3_000_000 ? true : undefined),
      {
        timeoutMs: 120_000,
        intervalMs: 20,
        what: 'the writer to append',
      },
    );
    child.kill('SIGKILL');
    expect((await done).signal).toBe('SIGKILL');
    const covered = (await listCheckpoints(log)).at(-1)!.size;
    const bytesBefore = (await stat(log)).size;

    const key = await fixtureKey(dir);
    const reopened = await AuditLog.open(log, { origin: 'test.baton.dev/audit', signer: key, lockTimeoutMs: 10_000 });
    expect(reopened.size).toBeGreaterThanOrEqual(covered);
    expect((await stat(log)).size).toBe(bytesBefore - reopened.repair.removedBytes);
    const keys = await fixtureTrustedKeys();
    expect(await verifyLog(log, keys, { workers: 0 })).toMatchObject({
      ok: true,
      uncheckpointedEntries: 0,
      warnings: [],
    });

    const [event] = (await readLines(log)).slice(-1).map((l) => JSON.parse(l));
    const { data, recordedtime, batonindex, ...rest } = event;
    const appended = await reopened.append({ ...rest, data });
    expect(appended.firstIndex).toBe(reopened.size - 1);
    await reopened.close();
    expect(await verifyLog(log, keys, { workers: 0 })).toMatchObject({ ok: true, entries: appended.treeSize });
  });

  test('a torn line and a stale lock from a dead process are repaired on open (deterministically)', async () => {
    const key = await fixtureKey(dir);
    const log = join(dir, 'torn.jsonl');
    const writer = await AuditLog.open(log, { origin: 'test.baton.dev/audit', signer: key });
    const [line] = await readLinesAfter(writer, 3);
    await writer.close();
    // A process that has exited: its pid is free, so the lock it "held" is stale.
    const dead = spawn(process.execPath, ['-e', '0']);
    await new Promise((r) => dead.on('close', r));
    await writeFile(
      `${log}.lock`,
      `${JSON.stringify({ pid: dead.pid, host: (await import('node:os')).hostname(), token: 'x', since: 'then' })}\n`,
    );
    await writeFile(log, `${await readFile(log, 'utf8')}${line!.slice(0, 300)}`);
    const keys = await fixtureTrustedKeys();
    const before = await verifyLog(log, keys, { workers: 0 });
    expect(before.ok).toBe(true);
    expect(before.warnings[0]).toMatch(/torn\.jsonl:4: the last line has no newline and no checkpoint covers it/);

    const reopened = await AuditLog.open(log, { origin: 'test.baton.dev/audit', signer: key, lockTimeoutMs: 5_000 });
    expect(reopened.repair).toEqual({ adoptedEntries: 0, removedBytes: 300 });
    await reopened.close();
    expect(await verifyLog(log, keys, { workers: 0 })).toMatchObject({ ok: true, entries: 3, warnings: [] });
    expect(await readdir(checkpointsDir(log))).not.toContainEqual(expect.stringMatching(/\.tmp$/));
  });
});

// Appends `n` events and returns their lines.
async function readLinesAfter(log: AuditLog, n: number): Promise<string[]> {
  const { synthRecords, createHandoffEvent } = await import('@baton/audit');
  const key = await fixtureKey(dir);
  await log.appendMany(await Promise.all([...synthRecords(n, { seed: 3 })].map((r) => createHandoffEvent(r, key))));
  return readLines(log.path);
}
