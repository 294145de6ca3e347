import { generateKeyPairSync } from 'node:crypto';
import { chmod, copyFile, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { formatTrustedKeys, formatVerifierKey, parseTrustedKeys, readEntries } from '@baton/audit';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { copyLog, fixtureKeyFile, readLines, removeDir, runCli, TRUSTED_KEYS, tempDir, writeLines } from './helpers.js';

let dir: string;
let log: string;
let keyFile: string;

beforeAll(async () => {
  dir = await tempDir();
  keyFile = await fixtureKeyFile(dir);
  log = join(dir, 'handoffs.jsonl');
  const r = await runCli([
    'audit',
    'synth',
    '--count',
    '150',
    '--key',
    keyFile,
    '-o',
    log,
    '--origin',
    'test.baton.dev/audit',
    '--batch',
    '40',
  ]);
  expect(r, r.stderr).toMatchObject({ code: 0 });
  expect(r.stderr).toMatch(
    /appended 150 events to .*handoffs\.jsonl \(entries 0 to 149, origin test\.baton\.dev\/audit\)/,
  );
});

afterAll(() => removeDir(dir));

describe.concurrent('baton audit, as a user runs it', () => {
  test("keygen --public-key adds a KMS-held key by its Ed25519 public key and prints the plan's publicKey; refuses another kind", async () => {
    const out = join(dir, 'keys-kms');
    const { publicKey } = generateKeyPairSync('ed25519');
    const pem = join(dir, 'kms.pub.pem');
    await writeFile(pem, publicKey.export({ format: 'pem', type: 'spki' }));
    const r = await runCli(['audit', 'keygen', '--public-key', pem, '--out', out, '--origin', 'ops.example/audit']);
    expect(r.code, r.stderr).toBe(0);
    const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
    const expected = formatVerifierKey('ops.example/audit', raw);
    expect(r.stdout).toContain(`key:          ${expected} (the plan's audit.signer.publicKey)`);
    const trusted = parseTrustedKeys(await readFile(join(out, 'trusted-keys.yaml'), 'utf8'), 'k');
    expect(trusted.toFile()).toEqual({ origin: 'ops.example/audit', keys: [{ key: expected }] });

    const p256 = join(dir, 'p256.pub.pem');
    await writeFile(
      p256,
      generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'pem', type: 'spki' }),
    );
    const bad = await runCli(['audit', 'keygen', '--public-key', p256, '--out', out]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /--public-key .*p256\.pub\.pem: not an Ed25519 public key in PEM \(it is an EC key, not Ed25519\)/,
    );
  });

  test("keygen without --name names a new log's key for its origin (C2SP tlog-checkpoint)", async () => {
    const out = join(dir, 'keys-origin');
    const r = await runCli(['audit', 'keygen', '--out', out, '--origin', 'ops.example/audit']);
    expect(r.code, r.stderr).toBe(0);
    const trusted = parseTrustedKeys(await readFile(join(out, 'trusted-keys.yaml'), 'utf8'), 'k');
    expect(trusted.toFile().keys[0]!.key).toMatch(/^ops\.example\/audit\+[0-9a-f]{8}\+/);
    expect(r.stdout).toMatch(/private key: {2}.*ops\.example_audit-[0-9a-f]{8}\.key/);
  });

  test('keygen writes a 0600 private key and a trusted-keys file, prints both paths and never the secret', async () => {
    const out = join(dir, 'keys');
    const r = await runCli(['audit', 'keygen', '--out', out, '--name', 'ops-2026', '--origin', 'ops.example/audit']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`private key:  ${join(out, 'ops-2026.key')}`);
    expect(r.stdout).toContain(`trusted keys: ${join(out, 'trusted-keys.yaml')}`);
    expect((await stat(join(out, 'ops-2026.key'))).mode & 0o777).toBe(0o600);
    // PRIVATE+KEY+name+hash+base64: the base64 seed may itself contain '+'.
    const secret = (await readFile(join(out, 'ops-2026.key'), 'utf8')).trim().split('+').slice(4).join('+');
    expect(secret.length).toBeGreaterThan(40);
    expect(r.stdout + r.stderr).not.toContain(secret);
    const trusted = parseTrustedKeys(await readFile(join(out, 'trusted-keys.yaml'), 'utf8'), 'k');
    expect(trusted.origin).toBe('ops.example/audit');
    // A second key for rotation is added to the same file.
    const again = await runCli([
      'audit',
      'keygen',
      '--out',
      out,
      '--name',
      'ops-2027',
      '--valid-from',
      '2027-01-01T00:00:00Z',
    ]);
    expect(again.code).toBe(0);
    expect(
      parseTrustedKeys(await readFile(join(out, 'trusted-keys.yaml'), 'utf8'), 'k').keys.map((k) => k.name),
    ).toEqual(['ops-2026', 'ops-2027']);
  });

  test('verify exits 0 and says what it checked; --json is machine-readable', async () => {
    const r = await runCli(['audit', 'verify', log, '--keys', TRUSTED_KEYS]);
    expect(r, r.stderr).toMatchObject({ code: 0 });
    expect(r.stdout).toMatch(
      /^verified .*handoffs\.jsonl: 150 entries, 5 trusted checkpoints \(newest covers 150, root [0-9a-f]{16}…\)/,
    );
    const j = await runCli(['audit', 'verify', log, '--keys', TRUSTED_KEYS, '--json']);
    expect(JSON.parse(j.stdout)).toMatchObject({ ok: true, entries: 150, checkpointedSize: 150, failures: [] });
    // On worker threads, as a large log is checked: the bundle's worker file is found beside it.
    const w = await runCli(['audit', 'verify', log, '--keys', TRUSTED_KEYS, '--workers', '2', '--json']);
    expect(w, w.stderr).toMatchObject({ code: 0 });
    expect(JSON.parse(w.stdout)).toMatchObject({ ok: true, entries: 150, checkpointedSize: 150, failures: [] });
  });

  test('ls filters by outcome, cluster and time, as a table or JSON', async () => {
    const all: { outcome: string; cluster: string; finishedAt: string }[] = [];
    for await (const d of readEntries(log)) {
      const r = d.statement.predicate;
      all.push({ outcome: r.outcome, cluster: r.cluster.name, finishedAt: r.finishedAt });
    }
    const failed = await runCli(['audit', 'ls', log, '--outcome', 'failed', '-o', 'json']);
    const failedRows = JSON.parse(failed.stdout) as typeof all;
    expect(failedRows.length).toBe(all.filter((x) => x.outcome === 'failed').length);
    expect(failedRows.length).toBeGreaterThan(0);
    expect(failedRows.every((x) => x.outcome === 'failed')).toBe(true);
    const cluster = all[120]!.cluster;
    const since = all[100]!.finishedAt;
    const expected = all.filter((x) => x.cluster === cluster && x.finishedAt >= since).length;
    expect(expected).toBeGreaterThan(0);
    const table = await runCli(['audit', 'ls', log, '--cluster', cluster, '--since', since, '--last', '3']);
    expect(table.stdout).toMatch(/^INDEX {3,}AGE {3,}CLUSTER {3,}OUTCOME {3,}FAILED STEP/);
    const rows = table.stdout.split('\n').filter((l) => l.split(/ {3,}/).includes(cluster));
    expect(rows).toHaveLength(Math.min(3, expected));
  });

  test('show prints one entry with its decoded statement, by index or run id', async () => {
    const byIndex = await runCli(['audit', 'show', log, '5', '-o', 'json']);
    const shown = JSON.parse(byIndex.stdout);
    expect(shown).toMatchObject({ index: 5, line: 6, event: { type: 'dev.baton.handoff.v1', batonindex: 5 } });
    expect(shown.statement.predicateType).toBe('https://baton.dev/handoff/v1');
    const byRun = await runCli(['audit', 'show', log, shown.event.id]);
    // YAML by default; the index line is enough to know it is entry 5.
    expect(byRun.stdout).toMatch(/^index: 5\nline: 6\n/);
  });

  test('prove writes a tlog-proof that verify-proof accepts offline', async () => {
    const file = join(dir, 'entry-7.tlog-proof');
    const p = await runCli(['audit', 'prove', log, '7', '-o', file]);
    expect(p, p.stderr).toMatchObject({ code: 0 });
    expect(await readFile(file, 'utf8')).toMatch(/^c2sp\.org\/tlog-proof@v1\n/);
    const v = await runCli(['audit', 'verify-proof', file, '--keys', TRUSTED_KEYS]);
    expect(v.code).toBe(0);
    expect(v.stdout).toMatch(/^verified: entry 7 of 150 in test\.baton\.dev\/audit/);
  });
});

describe.concurrent('bad input gives a clear message and a non-zero exit', () => {
  test('a corrupt line: verify exits 1 and ls exits 2, both naming the file and line', async () => {
    const path = join(dir, 'corrupt.jsonl');
    await copyLog(log, path);
    const lines = await readLines(path);
    lines[41] = '{"specversion":"1.0", this is not json';
    await writeLines(path, lines);
    const v = await runCli(['audit', 'verify', path, '--keys', TRUSTED_KEYS]);
    expect(v.code).toBe(1);
    expect(v.stdout).toMatch(/first: corrupt at entry 41/);
    expect(v.stdout).toMatch(/corrupt\.jsonl:42: entry 41 is not JSON/);
    const ls = await runCli(['audit', 'ls', path]);
    expect(ls.code).toBe(2);
    expect(ls.stderr).toMatch(/corrupt\.jsonl:42: entry 41 is not JSON .*run `baton audit verify`/);
  });

  test('a missing checkpoint: verify exits 1 and says where it looked', async () => {
    const path = join(dir, 'no-checkpoint.jsonl');
    await copyFile(log, path);
    const v = await runCli(['audit', 'verify', path, '--keys', TRUSTED_KEYS]);
    expect(v.code).toBe(1);
    expect(v.stdout).toMatch(
      /checkpoint-missing: .*no-checkpoint\.jsonl: no checkpoint found in .*no-checkpoint\.jsonl\.checkpoints/,
    );
  });

  test('an unreadable key file: exit 2 naming the file, the cause and the fix', async () => {
    const missing = await runCli([
      'audit',
      'synth',
      '--count',
      '1',
      '--key',
      join(dir, 'nope.key'),
      '-o',
      join(dir, 'x.jsonl'),
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(
      /cannot read signing key .*nope\.key: no such file; create one with `baton audit keygen --out <dir>`/,
    );
    const open = join(dir, 'open.key');
    await copyFile(keyFile, open);
    await chmod(open, 0o644);
    const tooOpen = await runCli(['audit', 'synth', '--count', '1', '--key', open, '-o', join(dir, 'y.jsonl')]);
    expect(tooOpen.code).toBe(2);
    expect(tooOpen.stderr).toMatch(/signing key .*open\.key is readable by others \(mode 0644\); run chmod 600/);
  });

  test('a log from a different origin: verify exits 1 naming both origins', async () => {
    const other = join(dir, 'other-origin.yaml');
    const fixture = parseTrustedKeys(await readFile(TRUSTED_KEYS, 'utf8'), TRUSTED_KEYS).toFile();
    await writeFile(other, formatTrustedKeys({ ...fixture, origin: 'prod.example/audit' }));
    const v = await runCli(['audit', 'verify', log, '--keys', other]);
    expect(v.code).toBe(1);
    expect(v.stdout).toMatch(
      /origin-mismatch: checkpoint .* is for log "test\.baton\.dev\/audit", but the trusted keys are for "prod\.example\/audit"/,
    );
  });

  test('usage errors exit 2: a missing flag, an unreadable trusted-keys file', async () => {
    const r = await runCli(['audit', 'verify', log]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/required option '--keys <file>' not specified/);
    const keys = await runCli(['audit', 'verify', log, '--keys', join(dir, 'missing.yaml')]);
    expect(keys.code).toBe(2);
    expect(keys.stderr).toMatch(/cannot read trusted-keys file .*missing\.yaml: no such file/);
  });
});
