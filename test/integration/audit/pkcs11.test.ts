import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  AuditLog,
  createHandoffEvent,
  openPkcs11Signer,
  parseTrustedKeys,
  synthRecords,
  verifyLog,
} from '@baton/audit';
import { ConfigError } from '@baton/errors';
import pkcs11js from 'pkcs11js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useTempDirs } from '../../support/temp-dirs.js';
import { runCli } from './helpers.js';

// Issue 30: the audit key generated in a PKCS#11 token and used there, never leaving it. SoftHSM 2 (Debian's) is the
// token: a real PKCS#11 module, loaded by baton as it would load an HSM vendor's.
const MODULE = '/usr/lib/softhsm/libsofthsm2.so';
const PIN = '604817';
const tempDir = useTempDirs();
let dir = '';
let uri = '';
const saved = process.env.SOFTHSM2_CONF;

beforeAll(() => {
  dir = tempDir('baton-pkcs11-');
  mkdirSync(join(dir, 'tokens'));
  writeFileSync(
    join(dir, 'softhsm2.conf'),
    `directories.tokendir = ${dir}/tokens\nobjectstore.backend = file\nlog.level = ERROR\n`,
  );
  // The CLI children inherit it: SoftHSM finds its token directory through this variable.
  process.env.SOFTHSM2_CONF = join(dir, 'softhsm2.conf');
  execFileSync(
    'softhsm2-util',
    ['--init-token', '--free', '--label', 'baton-audit', '--pin', PIN, '--so-pin', '918273'],
    {
      stdio: 'ignore',
    },
  );
  writeFileSync(join(dir, 'pin'), `${PIN}\n`, { mode: 0o600 });
  uri = `pkcs11:token=baton-audit;object=handoff-2027?module-path=${MODULE}&pin-source=file:${join(dir, 'pin')}`;
});

afterAll(() => {
  if (saved === undefined) delete process.env.SOFTHSM2_CONF;
  else process.env.SOFTHSM2_CONF = saved;
});

describe('an audit key in a PKCS#11 token (SoftHSM)', () => {
  let verifierKey = '';

  test('baton audit keygen --pkcs11 creates the key in the token and trusts it; the token will not hand out its private half', async () => {
    const out = join(dir, 'trust');
    const r = await runCli(['audit', 'keygen', '--pkcs11', uri, '--out', out, '--origin', 'ops.example/handoff']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('private key:  in the token, pkcs11:token=baton-audit;object=handoff-2027');
    verifierKey = /key: {10}(\S+)/.exec(r.stdout)?.[1] ?? '';
    expect(verifierKey).toMatch(/^ops\.example\/handoff\+[0-9a-f]{8}\+/);
    const trusted = parseTrustedKeys(readFileSync(join(out, 'trusted-keys.yaml'), 'utf8'), 'k');
    expect(trusted.toFile().keys).toEqual([{ key: verifierKey }]);
    // Nothing but the trusted-keys file was written: no key file.
    expect(readdirSync(out)).toEqual(['trusted-keys.yaml']);

    // Asked directly, the token refuses to reveal the private key's value.
    const p = new pkcs11js.PKCS11();
    p.load(MODULE);
    p.C_Initialize();
    try {
      const slot = p.C_GetSlotList(true).find((s) => p.C_GetTokenInfo(s).label.trim() === 'baton-audit')!;
      const session = p.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION);
      p.C_Login(session, pkcs11js.CKU_USER, PIN);
      p.C_FindObjectsInit(session, [{ type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PRIVATE_KEY }]);
      const [key] = p.C_FindObjects(session, 5);
      p.C_FindObjectsFinal(session);
      const attrs = p.C_GetAttributeValue(session, key!, [
        { type: pkcs11js.CKA_SENSITIVE },
        { type: pkcs11js.CKA_EXTRACTABLE },
      ]);
      expect(attrs.map((a) => (a.value as Buffer)[0])).toEqual([1, 0]);
      expect(() => p.C_GetAttributeValue(session, key!, [{ type: pkcs11js.CKA_VALUE }])).toThrow(
        /CKR_ATTRIBUTE_SENSITIVE/,
      );
      // A second keygen under the same label is refused, not a second key beside the first.
      const again = await runCli(['audit', 'keygen', '--pkcs11', uri, '--out', join(dir, 'again')]);
      expect(again.code).toBe(2);
      expect(again.stderr).toMatch(/already holds an object labelled "handoff-2027"; choose another object=/);
    } finally {
      p.C_Finalize();
    }
  });

  test('signs a log in the token that baton audit verify accepts with the trusted key', async () => {
    const signer = await openPkcs11Signer({ uri, keyName: 'ops.example/handoff', verifierKey });
    const path = join(dir, 'handoffs.jsonl');
    try {
      expect(signer.kind).toBe('pkcs11');
      const log = await AuditLog.open(path, { origin: 'ops.example/handoff', signer });
      await log.appendMany(
        await Promise.all([...synthRecords(5, { seed: 4 })].map((r) => createHandoffEvent(r, signer))),
      );
      await log.close();
    } finally {
      await signer.close();
    }
    const keys = join(dir, 'trust', 'trusted-keys.yaml');
    const v = await runCli(['audit', 'verify', path, '--keys', keys]);
    expect(v.code, v.stdout + v.stderr).toBe(0);
    const r = await verifyLog(path, parseTrustedKeys(readFileSync(keys, 'utf8'), keys), { workers: 0 });
    expect(r.failureCount).toBe(0);
  });

  test('a wrong PIN, another key, or a missing module is refused naming the URI and the fix, never the PIN', async () => {
    const wrongPin = uri.replace(/pin-source=[^&]*/, 'pin-value=000000');
    const err = await openPkcs11Signer({ uri: wrongPin, keyName: 'ops.example/handoff' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(
      /pin-value=redacted: login refused \(CKR_PIN_INCORRECT, PIN from pin-value\); check the PIN/,
    );
    expect((err as Error).message).not.toContain('000000');
    await expect(
      openPkcs11Signer({ uri, keyName: 'ops.example/handoff', verifierKey: 'ops.example/handoff+00000000+AQ' }),
    ).rejects.toThrow(/the token's key is ops\.example\/handoff\+[0-9a-f]{8}\+\S+, not the plan's publicKey/);
    await expect(
      openPkcs11Signer({ uri: uri.replace('object=handoff-2027', 'object=nope'), keyName: 'ops.example/handoff' }),
    ).rejects.toThrow(
      /no Ed25519 private key with that object\/id in the token; create one with baton audit keygen --pkcs11/,
    );
    await expect(
      openPkcs11Signer({ uri: uri.replace(MODULE, '/nonexistent/libp11.so'), keyName: 'ops.example/handoff' }),
    ).rejects.toThrow(/cannot load the PKCS#11 module \/nonexistent\/libp11\.so .*; check module-path/);
  });
});
