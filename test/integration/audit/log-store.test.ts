import { readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  AuditLog,
  checkpointsDir,
  createHandoffEvent,
  formatCheckpoint,
  formatTlogProof,
  hashLeaf,
  listCheckpoints,
  MerkleFrontier,
  parseCheckpoint,
  parseNote,
  parseTlogProof,
  proveConsistency,
  proveInclusion,
  SigningKey,
  signNote,
  synthRecords,
  TrustedKeySet,
  verifyConsistencyProof,
  verifyInclusion,
  verifyLog,
} from '@baton/audit';
import { AuditVerifyError, ConfigError, TimeoutError } from '@baton/errors';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  fixtureKey,
  fixtureTrustedKeys,
  ORIGIN,
  readLines,
  removeDir,
  tempDir,
  writeLines,
  writeLog,
} from './helpers.js';

let dir: string;
let key: SigningKey;
let keys: TrustedKeySet;
const events = (n: number, seed = 1, signer: SigningKey | SigningKey[] = key) =>
  Promise.all([...synthRecords(n, { seed })].map((r) => createHandoffEvent(r, signer)));

/** A copy of `line` at `index` whose signed statement was changed by `edit` (the signature no longer matches). */
function forge(line: string, index: number, edit: (st: { predicate: Record<string, unknown> }) => unknown): string {
  const entry = JSON.parse(line) as { batonindex: number; data: { payload: string } };
  const statement = JSON.parse(Buffer.from(entry.data.payload, 'base64').toString('utf8'));
  entry.data.payload = Buffer.from(JSON.stringify(edit(statement))).toString('base64');
  entry.batonindex = index;
  return JSON.stringify(entry);
}

beforeAll(async () => {
  dir = await tempDir();
  key = await fixtureKey(dir);
  keys = await fixtureTrustedKeys();
});

afterAll(() => removeDir(dir));

describe('AuditLog', () => {
  test('a new log starts with a signed empty checkpoint; each append adds one and keeps the old ones', async () => {
    const path = join(dir, 'new.jsonl');
    const log = await AuditLog.open(path, { origin: ORIGIN, signer: key });
    expect((await listCheckpoints(path)).map((c) => c.size)).toEqual([0]);
    const a = await log.appendMany(await events(3));
    const b = await log.append((await events(1, 2))[0]!);
    expect(a).toMatchObject({ firstIndex: 0, count: 3, treeSize: 3 });
    expect(b).toMatchObject({ firstIndex: 3, count: 1, treeSize: 4 });
    expect(b.root).toMatch(/^[0-9a-f]{64}$/);
    expect((await listCheckpoints(path)).map((c) => c.size)).toEqual([0, 3, 4]);
    const note = parseNote(await readFile(b.checkpoint));
    expect(typeof note === 'string' ? note : parseCheckpoint(note.text)).toMatchObject({ origin: ORIGIN, size: 4 });
    await log.close();
    expect(await verifyLog(path, keys, { workers: 0 })).toMatchObject({ ok: true, entries: 4, trustedCheckpoints: 3 });
  });

  test('appends on one instance run one after another; recordedtime never goes backwards, even if the clock does', async () => {
    const path = join(dir, 'serial.jsonl');
    let clock = Date.parse('2027-03-01T00:00:00Z');
    const backwards = () => {
      clock -= 60_000;
      return new Date(clock);
    };
    const log = await AuditLog.open(path, { origin: ORIGIN, signer: key, now: backwards });
    const results = await Promise.all((await events(12)).map((e) => log.append(e)));
    expect(results.map((r) => r.firstIndex).sort((x, y) => x - y)).toEqual([...Array(12).keys()]);
    await log.close();
    const times = (await readLines(path)).map((l) => Date.parse(JSON.parse(l).recordedtime));
    expect(times).toEqual([...times].sort((x, y) => x - y));
    expect((await verifyLog(path, keys, { workers: 0 })).ok).toBe(true);
  });

  test('reopening re-reads the log to the same root and continues it', async () => {
    const path = join(dir, 'reopen.jsonl');
    await writeLog(path, key, 30, { batch: 8 });
    const a = await AuditLog.open(path, { origin: ORIGIN, signer: key });
    const r1 = await a.appendMany(await events(2, 5));
    await a.close();
    const b = await AuditLog.open(path, { origin: ORIGIN, signer: key });
    expect(b.size).toBe(32);
    const r2 = await b.appendMany(await events(2, 6));
    await b.close();
    expect(r2.firstIndex).toBe(r1.treeSize);
    expect(await verifyLog(path, keys, { workers: 0 })).toMatchObject({ ok: true, entries: 34 });
  });

  test('complete entries a crashed writer left without a checkpoint are adopted and checkpointed', async () => {
    const path = join(dir, 'adopt.jsonl');
    await writeLog(path, key, 5, { batch: 5 });
    const before = await readLines(path);
    // What an append leaves when it dies after its data fsync and before its checkpoint.
    const extra = before.slice(0, 2).map((l, i) => l.replace(/"batonindex":\d+/, `"batonindex":${5 + i}`));
    await writeLines(path, [...before, ...extra]);
    const pending = await verifyLog(path, keys, { workers: 0 });
    expect(pending).toMatchObject({ ok: true, uncheckpointedEntries: 2 });
    expect(pending.warnings[0]).toMatch(/2 entries after line 5 are signed but not yet covered by a checkpoint/);
    const log = await AuditLog.open(path, { origin: ORIGIN, signer: key });
    expect(log.repair).toEqual({ adoptedEntries: 2, removedBytes: 0 });
    await log.close();
    expect(await verifyLog(path, keys, { workers: 0 })).toMatchObject({
      ok: true,
      entries: 7,
      uncheckpointedEntries: 0,
    });
  });

  test('refuses to write to a log whose checkpointed entries were changed after a clean close, and writes nothing', async () => {
    const path = join(dir, 'edited.jsonl');
    await writeLog(path, key, 6, { batch: 3 });
    const lines = await readLines(path);
    // Same length, so nothing but the bytes themselves tells the edit apart.
    lines[1] = lines[1]!.replace('"subject":"cluster/', '"subject":"clustEr/');
    await writeLines(path, lines);
    const size = (await stat(path)).size;
    const open = AuditLog.open(path, { origin: ORIGIN, signer: key });
    await expect(open).rejects.toThrow(AuditVerifyError);
    await expect(open).rejects.toThrow(/does not match checkpoint .*00006\.checkpoint.*run `baton audit verify`/);
    expect((await stat(path)).size).toBe(size);
  });

  test('refuses a complete line after the checkpoint that is not an entry', async () => {
    const path = join(dir, 'garbage.jsonl');
    await writeLog(path, key, 2, { batch: 2 });
    await writeFile(path, `${await readFile(path, 'utf8')}not json at all\n`);
    await expect(AuditLog.open(path, { origin: ORIGIN, signer: key })).rejects.toThrow(
      /garbage\.jsonl:3: entry 2 is not JSON .*move the damaged log aside/,
    );
  });

  test('a tampered line adopted by the writer is refused before it signs, naming the file, the index and the fix', async () => {
    const path = join(dir, 'forged.jsonl');
    await writeLog(path, key, 5, { batch: 5 });
    const lines = await readLines(path);
    // A line after the checkpoint with the right index and schema whose signed statement was changed.
    await writeLines(path, [
      ...lines,
      forge(lines[2]!, 5, (st) => ({ ...st, predicate: { ...st.predicate, outcome: 'failed' } })),
    ]);
    const size = (await stat(path)).size;
    const open = AuditLog.open(path, { origin: ORIGIN, signer: key });
    await expect(open).rejects.toThrow(AuditVerifyError);
    await expect(open).rejects.toThrow(
      /forged\.jsonl:6: entry 5 has a DSSE signature by \S+ that does not verify over its payload; no checkpoint covers it and none was signed over it: treat the entry as forged or damaged, run `baton audit verify`, and move the damaged log aside or cut it back to its first 5 lines/,
    );
    expect((await listCheckpoints(path)).map((c) => c.size)).toEqual([0, 5]);
    expect((await stat(path)).size).toBe(size);
    expect((await verifyLog(path, keys, { workers: 0 })).failures[0]).toMatchObject({
      kind: 'bad-signature',
      index: 5,
    });
  });

  test('an adopted entry signed by an untrusted key is refused; with that key in trustedKeys it is adopted', async () => {
    const path = join(dir, 'stranger.jsonl');
    await writeLog(path, key, 3, { batch: 3 });
    const stranger = SigningKey.fromSeed('another-writer', Buffer.alloc(32, 0x5e));
    const [event] = await events(1, 9, stranger);
    const line = JSON.parse((await readLines(path))[0]!) as Record<string, unknown>;
    const entry = { ...line, ...event, batonindex: 3, recordedtime: line.recordedtime };
    await writeLines(path, [...(await readLines(path)), JSON.stringify(entry)]);
    await expect(AuditLog.open(path, { origin: ORIGIN, signer: key })).rejects.toThrow(
      /stranger\.jsonl:4: entry 3 is signed only by keys that are not trusted \(another-writer\+[0-9a-f]+\); .*if you trust that key, pass it in trustedKeys/,
    );
    expect((await listCheckpoints(path)).map((c) => c.size)).toEqual([0, 3]);
    const trustedKeys = new TrustedKeySet({
      origin: ORIGIN,
      keys: [{ key: key.verifierKey }, { key: stranger.verifierKey }],
    });
    const log = await AuditLog.open(path, { origin: ORIGIN, signer: key, trustedKeys });
    expect(log.repair).toEqual({ adoptedEntries: 1, removedBytes: 0 });
    await log.close();
    expect((await listCheckpoints(path)).map((c) => c.size)).toEqual([0, 3, 4]);
  });

  test('refuses a newest checkpoint that no trusted key signed, even when it matches the (edited) log', async () => {
    const path = join(dir, 'forged-checkpoint.jsonl');
    await writeLog(path, key, 4, { batch: 4 });
    const lines = await readLines(path);
    lines[1] = lines[1]!.replace('"subject":"cluster/', '"subject":"clustEr/');
    await writeLines(path, lines);
    // The editor appends a line and signs a checkpoint over the edited log with a key of their own.
    const edited = [...lines, lines[0]!.replace(/"batonindex":\d+/, '"batonindex":4')];
    await writeLines(path, edited);
    const frontier = new MerkleFrontier();
    for (const l of edited) frontier.append(hashLeaf(Buffer.from(l)));
    const attacker = SigningKey.fromSeed('attacker', Buffer.alloc(32, 0xa5));
    await writeFile(
      join(checkpointsDir(path), '00000000000000000005.checkpoint'),
      await signNote(formatCheckpoint({ origin: ORIGIN, size: 5, root: frontier.root() }), [attacker]),
    );
    await expect(AuditLog.open(path, { origin: ORIGIN, signer: key })).rejects.toThrow(
      /checkpoint .*00000000000000000005\.checkpoint is signed only by keys that are not trusted \(attacker\+[0-9a-f]+\); .*treat the checkpoint as forged: run `baton audit verify` before appending/,
    );
    expect((await listCheckpoints(path)).map((c) => c.size)).toEqual([0, 4, 5]);
  });

  test('refuses a log whose checkpoints were removed', async () => {
    const path = join(dir, 'no-checkpoints.jsonl');
    await writeLog(path, key, 2, { batch: 2 });
    await rm(checkpointsDir(path), { recursive: true });
    await expect(AuditLog.open(path, { origin: ORIGIN, signer: key })).rejects.toThrow(
      /no-checkpoints\.jsonl has \d+ bytes of entries but no checkpoint in .*no-checkpoints\.jsonl\.checkpoints: the checkpoints were removed; restore the folder from a backup/,
    );
  });

  test('refuses a log of another origin, naming both', async () => {
    const path = join(dir, 'origin.jsonl');
    await writeLog(path, key, 1);
    const open = AuditLog.open(path, { origin: 'other.example/audit', signer: key });
    await expect(open).rejects.toThrow(ConfigError);
    await expect(open).rejects.toThrow(/belongs to origin "test.baton.dev\/audit", not "other.example\/audit"/);
  });

  test('rejects an event that is not a handoff event, naming the field', async () => {
    const log = await AuditLog.open(join(dir, 'bad-event.jsonl'), { origin: ORIGIN, signer: key });
    const [event] = await events(1);
    await expect(log.append({ ...event!, type: 'other' as 'dev.baton.handoff.v1' })).rejects.toThrow(
      /^event\[0\]\.type: /,
    );
    await log.close();
  });

  test('waits for a live lock holder and times out naming it', async () => {
    const path = join(dir, 'locked.jsonl');
    await writeLog(path, key, 1);
    const { hostname } = await import('node:os');
    await writeFile(`${path}.lock`, JSON.stringify({ pid: process.pid, host: hostname(), token: 't', since: 'now' }));
    const open = AuditLog.open(path, { origin: ORIGIN, signer: key, lockTimeoutMs: 200 });
    await expect(open).rejects.toThrow(TimeoutError);
    await expect(open).rejects.toThrow(new RegExp(`held by pid ${process.pid} .*delete .*locked\\.jsonl\\.lock`));
    await rm(`${path}.lock`);
  });
});

describe('key rotation', () => {
  test('old and new keys with overlapping windows verify; each key only counts inside its window', async () => {
    const oldKey = key;
    const newKey = SigningKey.fromSeed('baton-test-2027', Buffer.alloc(32, 0x27));
    const path = join(dir, 'rotation.jsonl');
    const records = [...synthRecords(20, { seed: 11, startMs: Date.parse('2026-03-01T00:00:00Z') })];
    const cut = Date.parse(records[10]!.finishedAt);
    let clock = Date.parse('2026-03-01T00:00:00Z');
    const now = () => {
      clock += 3_600_000;
      return new Date(clock);
    };
    // Before the cut: old key. Overlap (entries 10-12): both sign. After: new key only.
    const log = await AuditLog.open(path, { origin: ORIGIN, signer: oldKey, now });
    await log.appendMany(await Promise.all(records.slice(0, 10).map((r) => createHandoffEvent(r, oldKey))));
    await log.close();
    const overlap = await AuditLog.open(path, { origin: ORIGIN, signer: [oldKey, newKey], now });
    await overlap.appendMany(
      await Promise.all(records.slice(10, 13).map((r) => createHandoffEvent(r, [oldKey, newKey]))),
    );
    await overlap.close();
    const after = await AuditLog.open(path, { origin: ORIGIN, signer: newKey, now });
    await after.appendMany(await Promise.all(records.slice(13).map((r) => createHandoffEvent(r, newKey))));
    await after.close();

    const until = new Date(Date.parse(records[12]!.finishedAt) + 1).toISOString();
    const both = new TrustedKeySet({
      origin: ORIGIN,
      keys: [
        { key: oldKey.verifierKey, validUntil: until },
        { key: newKey.verifierKey, validFrom: new Date(cut).toISOString() },
      ],
    });
    expect(await verifyLog(path, both, { workers: 0 })).toMatchObject({ ok: true, entries: 20 });
    const newOnly = new TrustedKeySet({ origin: ORIGIN, keys: [{ key: newKey.verifierKey }] });
    const r = await verifyLog(path, newOnly, { workers: 0 });
    expect(r.failures.find((f) => f.index !== undefined)).toMatchObject({ kind: 'unknown-key', index: 0 });
    const tooEarly = new TrustedKeySet({
      origin: ORIGIN,
      keys: [
        { key: oldKey.verifierKey, validUntil: new Date(cut - 1).toISOString() },
        { key: newKey.verifierKey, validFrom: until },
      ],
    });
    expect((await verifyLog(path, tooEarly, { workers: 0 })).failures.find((f) => f.index !== undefined)?.kind).toBe(
      'unknown-key',
    );
  });
});

describe('proofs', () => {
  test('an inclusion proof verifies offline; a changed entry or path does not', async () => {
    const path = join(dir, 'proofs.jsonl');
    await writeLog(path, key, 45, { batch: 9 });
    const proof = await proveInclusion(path, 17);
    expect(proof.hashes.length).toBeGreaterThan(0);
    const text = formatTlogProof(proof);
    expect(text).toMatch(/^c2sp\.org\/tlog-proof@v1\nextra \S+\nindex 17\n/);
    const ok = verifyInclusion(text, keys);
    expect(ok).toMatchObject({ ok: true, index: 17, treeSize: 45 });

    const parsed = parseTlogProof(text);
    if (typeof parsed === 'string') throw new Error(parsed);
    const entry = Buffer.from(parsed.entry.toString().replace('"subject":"cluster/', '"subject":"cluster/Q'));
    expect(verifyInclusion({ ...parsed, entry }, keys)).toMatchObject({ ok: false, kind: 'edited' });
    const hashes = parsed.hashes.map((h, i) => (i === 0 ? Buffer.alloc(32) : h));
    expect(verifyInclusion({ ...parsed, hashes }, keys)).toMatchObject({ ok: false, kind: 'edited' });
    expect(verifyInclusion({ ...parsed, index: 18 }, keys).ok).toBe(false);
    const stranger = new TrustedKeySet({
      origin: ORIGIN,
      keys: [{ key: SigningKey.fromSeed('x', Buffer.alloc(32, 9)).verifierKey }],
    });
    expect(verifyInclusion(text, stranger)).toMatchObject({ ok: false, kind: 'unknown-key' });
    expect(verifyInclusion('garbage', keys)).toMatchObject({ ok: false, kind: 'corrupt' });
  });

  test('any two kept checkpoints can be proven consistent', async () => {
    const path = join(dir, 'proofs.jsonl');
    const cps = await listCheckpoints(path);
    const roots = new Map<number, Buffer>();
    for (const c of cps) {
      const note = parseNote(await readFile(c.path));
      const cp = typeof note === 'string' ? note : parseCheckpoint(note.text);
      if (typeof cp === 'string') throw new Error(cp);
      roots.set(cp.size, cp.root);
    }
    for (const [m, n] of [
      [9, 45],
      [18, 27],
      [0, 36],
      [27, 27],
    ] as const) {
      const proof = await proveConsistency(path, m, n);
      expect(verifyConsistencyProof(m, n, proof, roots.get(m)!, roots.get(n)!), `${m} → ${n}`).toBe(true);
      // Size 0 is a prefix of every tree and equal sizes need equal roots, so only 0 < m < n can be swapped.
      if (m > 0 && m < n) expect(verifyConsistencyProof(m, n, proof, roots.get(n)!, roots.get(m)!)).toBe(false);
    }
    expect(await readdir(checkpointsDir(path))).toHaveLength(cps.length);
  });
});
