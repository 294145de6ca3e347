import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  checkpointsDir,
  createHandoffEvent,
  formatCheckpoint,
  parseCheckpoint,
  parseNote,
  SigningKey,
  signNote,
  synthRecords,
  type TrustedKeySet,
  type VerifyResult,
  verifyLog,
} from '@baton/audit';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  copyLog,
  fixtureKey,
  fixtureTrustedKeys,
  ORIGIN,
  readLines,
  removeDir,
  tempDir,
  writeLines,
  writeLog,
} from './helpers.js';

const COUNT = 60;
let dir: string;
let key: SigningKey;
let keys: TrustedKeySet;
let pristine: string;
const attacker = SigningKey.fromSeed('attacker', Buffer.alloc(32, 0xa5));

// Every test copies the pristine log (and its checkpoints) into its own folder and tampers with the copy.
async function copyOfLog(name: string): Promise<string> {
  const path = join(dir, name, 'log.jsonl');
  await mkdir(join(dir, name));
  await copyLog(pristine, path);
  return path;
}

function first(r: VerifyResult) {
  return { ok: r.ok, kind: r.failures[0]?.kind, index: r.failures[0]?.index };
}

beforeAll(async () => {
  dir = await tempDir();
  key = await fixtureKey(dir);
  keys = await fixtureTrustedKeys();
  pristine = join(dir, 'pristine', 'log.jsonl');
  await mkdir(join(dir, 'pristine'));
  await writeLog(pristine, key, COUNT, { batch: 7 });
});

afterAll(() => removeDir(dir));

describe('a log as written', () => {
  test('verifies, inline and in two worker threads, with every checkpoint checked', async () => {
    const inline = await verifyLog(pristine, keys, { workers: 0 });
    expect(inline).toMatchObject({
      ok: true,
      entries: COUNT,
      checkpointedSize: COUNT,
      uncheckpointedEntries: 0,
      failureCount: 0,
    });
    // One checkpoint for the empty log, then one per append of 7.
    expect(inline.trustedCheckpoints).toBe(1 + Math.ceil(COUNT / 7));
    const threaded = await verifyLog(pristine, keys, { workers: 2 });
    expect(threaded).toEqual(inline);
  });
});

describe('tampering is detected, with the first failing index and its kind', () => {
  test('a flipped byte inside a signed payload: edited at that entry', async () => {
    const path = await copyOfLog('flip-payload');
    const lines = await readLines(path);
    const at = lines[17]!.indexOf('"payload":"') + 200;
    lines[17] = lines[17]!.slice(0, at) + (lines[17]![at] === 'A' ? 'B' : 'A') + lines[17]!.slice(at + 1);
    await writeLines(path, lines);
    const r = await verifyLog(path, keys, { workers: 0 });
    expect(first(r)).toEqual({ ok: false, kind: 'edited', index: 17 });
    expect(r.failures[0]!.message).toMatch(
      /log.jsonl:18: entry 17 has a DSSE signature by baton-test-2026 that does not verify/,
    );
  });

  test('a flipped byte in the unsigned envelope: edited at that entry (checked against the signed statement)', async () => {
    const path = await copyOfLog('flip-envelope');
    const lines = await readLines(path);
    lines[9] = lines[9]!.replace('"subject":"cluster/', '"subject":"cluster/X');
    await writeLines(path, lines);
    const r = await verifyLog(path, keys, { workers: 2 });
    expect(first(r)).toEqual({ ok: false, kind: 'edited', index: 9 });
    expect(r.failures[0]!.message).toMatch(/envelope subject "cluster\/X/);
  });

  test('a deleted line: missing at that index', async () => {
    const path = await copyOfLog('deleted');
    const lines = await readLines(path);
    lines.splice(23, 1);
    await writeLines(path, lines);
    const r = await verifyLog(path, keys, { workers: 0 });
    expect(first(r)).toEqual({ ok: false, kind: 'missing', index: 23 });
    expect(r.failures[0]!.message).toMatch(/entry 23 is missing/);
  });

  test('two swapped lines: reordered at the first', async () => {
    const path = await copyOfLog('swapped');
    const lines = await readLines(path);
    [lines[30], lines[31]] = [lines[31]!, lines[30]!];
    await writeLines(path, lines);
    expect(first(await verifyLog(path, keys, { workers: 0 }))).toEqual({ ok: false, kind: 'reordered', index: 30 });
  });

  test('a duplicated line: reordered where the copy stands', async () => {
    const path = await copyOfLog('duplicated');
    const lines = await readLines(path);
    lines.splice(41, 0, lines[40]!);
    await writeLines(path, lines);
    expect(first(await verifyLog(path, keys, { workers: 0 }))).toEqual({ ok: false, kind: 'reordered', index: 41 });
  });

  test('a truncated tail, whole lines or mid-line: truncated where the log now ends', async () => {
    const path = await copyOfLog('truncated');
    const lines = await readLines(path);
    await writeLines(path, lines.slice(0, 55));
    const r = await verifyLog(path, keys, { workers: 0 });
    expect(first(r)).toEqual({ ok: false, kind: 'truncated', index: 55 });
    expect(r.failures[0]!.message).toMatch(/ends after 55 entries, but checkpoint .*00060\.checkpoint vouches for 60/);
    const text = await readFile(path, 'utf8');
    await writeFile(path, text.slice(0, text.length - 300));
    expect(first(await verifyLog(path, keys, { workers: 0 }))).toEqual({ ok: false, kind: 'truncated', index: 54 });
  });

  test('a checkpoint replaced by one signed with an unknown key: unknown-key for that checkpoint', async () => {
    const path = await copyOfLog('unknown-checkpoint-key');
    const newest = join(checkpointsDir(path), `${String(COUNT).padStart(20, '0')}.checkpoint`);
    const note = parseNote(await readFile(newest));
    if (typeof note === 'string') throw new Error(note);
    await writeFile(newest, await signNote(note.text, [attacker]));
    const r = await verifyLog(path, keys, { workers: 0 });
    expect(r.ok).toBe(false);
    expect(r.failures[0]).toMatchObject({ kind: 'unknown-key', checkpoint: newest });
    expect(r.failures[0]!.message).toMatch(/signed only by keys that are not trusted \(attacker\+/);
  });

  test('a checkpoint whose trusted signature does not verify: bad-signature', async () => {
    const path = await copyOfLog('bad-checkpoint-sig');
    const file = join(checkpointsDir(path), `${String(COUNT).padStart(20, '0')}.checkpoint`);
    const note = parseNote(await readFile(file));
    if (typeof note === 'string') throw new Error(note);
    const sig = note.signatures[0]!;
    const flipped = Buffer.from(sig.signature);
    flipped[10] = flipped[10]! ^ 1;
    await writeFile(
      file,
      `${note.text}\n\u2014 ${sig.name} ${Buffer.concat([sig.keyId, flipped]).toString('base64')}\n`,
    );
    const r = await verifyLog(path, keys, { workers: 0 });
    expect(r.failures[0]).toMatchObject({ kind: 'bad-signature', checkpoint: file });
  });

  test('a forged event appended after the newest checkpoint, claiming the trusted key: bad-signature', async () => {
    const path = await copyOfLog('forged');
    const lines = await readLines(path);
    const [record] = [...synthRecords(1, { seed: 99 })];
    const forged = JSON.parse(lines[0]!.replace('"batonindex":0', `"batonindex":${COUNT}`));
    const signed = await createHandoffEvent(record!, attacker);
    forged.data = {
      ...signed.data,
      signatures: [{ keyid: `baton-test-2026+${key.keyId.toString('hex')}`, sig: signed.data.signatures[0]!.sig }],
    };
    Object.assign(forged, { id: signed.id, subject: signed.subject, time: signed.time, source: signed.source });
    await writeLines(path, [...lines, JSON.stringify(forged)]);
    const r = await verifyLog(path, keys, { workers: 0 });
    expect(first(r)).toEqual({ ok: false, kind: 'bad-signature', index: COUNT });
  });

  test('an event signed with an unknown key: unknown-key at that entry', async () => {
    const path = await copyOfLog('unknown-event-key');
    const lines = await readLines(path);
    const entry = JSON.parse(lines[12]!);
    const [record] = [...synthRecords(1, { seed: 5 })];
    const signed = await createHandoffEvent(record!, attacker);
    Object.assign(entry, {
      id: signed.id,
      subject: signed.subject,
      time: signed.time,
      source: signed.source,
      data: signed.data,
    });
    lines[12] = JSON.stringify(entry);
    await writeLines(path, lines);
    expect(first(await verifyLog(path, keys, { workers: 0 }))).toEqual({ ok: false, kind: 'unknown-key', index: 12 });
  });

  test('recorded times going backwards: time-order', async () => {
    const path = await copyOfLog('time');
    const lines = await readLines(path);
    lines[20] = lines[20]!.replace(/"recordedtime":"[^"]+"/, '"recordedtime":"2026-06-01T00:00:00.000Z"');
    await writeLines(path, lines);
    const r = await verifyLog(path, keys, { workers: 0 });
    expect(first(r)).toEqual({ ok: false, kind: 'time-order', index: 20 });
  });

  test('an older checkpoint that contradicts the newest (a fork, signed by the trusted key): inconsistent', async () => {
    const path = await copyOfLog('fork');
    const file = join(checkpointsDir(path), `${String(14).padStart(20, '0')}.checkpoint`);
    await writeFile(
      file,
      await signNote(formatCheckpoint({ origin: ORIGIN, size: 14, root: Buffer.alloc(32, 1) }), [key]),
    );
    const r = await verifyLog(path, keys, { workers: 0 });
    expect(r.failures[0]).toMatchObject({ kind: 'inconsistent', checkpoint: file });
  });

  test('no checkpoints at all: checkpoint-missing', async () => {
    const path = await copyOfLog('no-checkpoints');
    await rm(checkpointsDir(path), { recursive: true });
    const r = await verifyLog(path, keys, { workers: 0 });
    expect(r.failures[0]!.kind).toBe('checkpoint-missing');
    expect(r.failures[0]!.message).toMatch(/no checkpoint found in .*log\.jsonl\.checkpoints/);
  });

  test('a log from a different origin: origin-mismatch for each checkpoint', async () => {
    const other = join(dir, 'other-origin.jsonl');
    await writeLog(other, key, 5, { origin: 'elsewhere.example/audit', batch: 5 });
    const r = await verifyLog(other, keys, { workers: 0 });
    expect(r.failures[0]!.kind).toBe('origin-mismatch');
    expect(r.failures[0]!.message).toMatch(
      /is for log "elsewhere.example\/audit", but the trusted keys are for "test.baton.dev\/audit"/,
    );
  });

  test('a log cut back together with its newest checkpoints is caught by a checkpoint kept elsewhere', async () => {
    const path = await copyOfLog('cut-back');
    const keep = join(dir, 'witnessed-60.checkpoint');
    const cps = checkpointsDir(path);
    const newest = join(cps, `${String(COUNT).padStart(20, '0')}.checkpoint`);
    await writeFile(keep, await readFile(newest));
    for (const name of await readdir(cps)) {
      const cp = parseCheckpoint(
        ((n) => (typeof n === 'string' ? '' : n.text))(parseNote(await readFile(join(cps, name)))),
      );
      if (typeof cp !== 'string' && cp.size > 49) await rm(join(cps, name));
    }
    await writeLines(path, (await readLines(path)).slice(0, 49));
    expect((await verifyLog(path, keys, { workers: 0 })).ok).toBe(true);
    expect(first(await verifyLog(path, keys, { workers: 0, extraCheckpoints: [keep] }))).toEqual({
      ok: false,
      kind: 'truncated',
      index: 49,
    });
  });
});

describe('hostile input never throws', () => {
  test('random bytes as the log and as checkpoints give failures, not exceptions', async () => {
    const path = join(dir, 'fuzz', 'log.jsonl');
    await mkdir(checkpointsDir(path), { recursive: true });
    const deadline = performance.now() + 3_000;
    let rounds = 0;
    while (performance.now() < deadline || rounds < 20) {
      // Mostly random bytes, sometimes with newlines and JSON-looking fragments, so the parser sees more shapes.
      const parts = Array.from({ length: 1 + (rounds % 7) }, (_, i) =>
        i % 3 === 0
          ? randomBytes(50 + ((rounds * 37) % 400))
          : Buffer.from(`{"specversion":"1.0","batonindex":${i}}\n`),
      );
      await writeFile(path, Buffer.concat(parts));
      await writeFile(
        join(checkpointsDir(path), `${String(rounds % 3).padStart(20, '0')}.checkpoint`),
        randomBytes(100 + rounds),
      );
      const r = await verifyLog(path, keys, { workers: 0 });
      expect(r.ok).toBe(false);
      expect(r.failures.length).toBeGreaterThan(0);
      rounds++;
    }
    expect(rounds).toBeGreaterThanOrEqual(20);
  });

  test('every single-byte flip of a real log is detected', async () => {
    const path = await copyOfLog('flips');
    const original = await readFile(path);
    const step = Math.floor(original.length / 60);
    for (let at = 3; at < original.length; at += step) {
      const bytes = Buffer.from(original);
      bytes[at] = bytes[at]! ^ (1 << (at % 8));
      await writeFile(path, bytes);
      const r = await verifyLog(path, keys, { workers: 0 });
      expect(r.ok, `flip at byte ${at}`).toBe(false);
    }
  });
});
