import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, ProcessError } from '@baton/errors';
import { beforeAll, describe, expect, test } from 'vitest';
import { useTempDirs } from '../../../test/support/temp-dirs.js';
import { createCommandSigner } from './command-signer.js';
import { writeSigningKeyFile } from './key-files.js';
import { checkSigner } from './open-signer.js';
import { parseNote, signNote } from './signed-note.js';
import { formatSigningKey, generateSigningKey, publicKeyObject, SigningKey, verifyEd25519 } from './signing-key.js';

const tempDir = useTempDirs();

// A signer command as a KMS vendor's CLI would be one: it holds the key (here a seed file standing in for the KMS),
// reads the message on stdin, prints the base64 signature. Its modes are the ways such a tool fails.
const SIGNER = `
import { createPrivateKey, sign } from 'node:crypto';
import { appendFileSync, readFileSync } from 'node:fs';
const [seedFile, mode, seen] = process.argv.slice(2);
const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const message = Buffer.concat(chunks);
if (seen) appendFileSync(seen, process.env.BATON_SIGN_SHA256 + ' ' + message.length + '\\n');
if (mode === 'fail') { process.stderr.write('warming up\\nkms: PERMISSION_DENIED on key ring ops\\n'); process.exit(3); }
if (mode === 'hang') setInterval(() => {}, 1000);
else if (mode === 'garbage') process.stdout.write('signed!\\n');
else {
  const seed = Buffer.from(readFileSync(seedFile, 'utf8').trim(), 'hex');
  const key = createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' });
  process.stdout.write(sign(null, message, key).toString('base64') + '\\n');
}
`;

let dir: string;
let script: string;
let seedFile: string;
let key: SigningKey;

beforeAll(() => {
  dir = tempDir('baton-command-signer-');
  script = join(dir, 'kms-sign.mjs');
  writeFileSync(script, SIGNER);
  seedFile = join(dir, 'seed');
  const seed = Buffer.alloc(32, 7);
  writeFileSync(seedFile, seed.toString('hex'), { mode: 0o600 });
  key = SigningKey.fromSeed('ops.example/handoff', seed);
});

const signer = (mode = 'sign', o: { verifierKey?: string; timeoutMs?: number; seen?: string } = {}) =>
  createCommandSigner({
    command: [process.execPath, script, seedFile, mode, ...(o.seen ? [o.seen] : [])],
    verifierKey: o.verifierKey ?? key.verifierKey,
    timeoutMs: o.timeoutMs ?? 20_000,
    source: 'plan.yaml: audit.signer',
  });

describe('a signer command', () => {
  test('signs the message it reads on stdin; notes it signs verify, and it is told the message digest', async () => {
    const seen = join(dir, 'seen');
    const s = signer('sign', { seen });
    expect(s).toMatchObject({ kind: 'command', name: key.name, verifierKey: key.verifierKey });
    const note = await signNote('ops.example/handoff\n3\nAAAA\n', [s]);
    expect(note).toBe(await signNote('ops.example/handoff\n3\nAAAA\n', [key]));
    const parsed = parseNote(note);
    expect(typeof parsed).not.toBe('string');
    const message = Buffer.from('ops.example/handoff\n3\nAAAA\n');
    expect(readFileSync(seen, 'utf8')).toBe(
      `${createHash('sha256').update(message).digest('hex')} ${message.length}\n`,
    );
    const sig = await s.sign(Buffer.from('x'));
    expect(verifyEd25519(publicKeyObject(key.publicKey), Buffer.from('x'), sig)).toBe(true);
  });

  test.each([
    [
      'signs with another key',
      () => signer('sign', { verifierKey: generateSigningKey('ops.example/handoff').verifierKey }),
      /returned a signature that does not verify with plan\.yaml: audit\.signer\.publicKey \(ops\.example\/handoff\+[0-9a-f]{8}\+.*\); the command signs with another key/,
    ],
    [
      'exits non-zero',
      () => signer('fail'),
      /^plan\.yaml: audit\.signer: the signer command .* exited 3 \(stderr: kms: PERMISSION_DENIED on key ring ops\); run it by hand/,
    ],
    [
      'prints something else',
      () => signer('garbage'),
      /printed 7 characters, not the base64 of a 64-byte Ed25519 signature/,
    ],
    [
      'does not answer',
      () => signer('hang', { timeoutMs: 500 }),
      /did not answer within 0\.5 s and was killed; .* raise plan\.yaml: audit\.signer\.timeoutSeconds/,
    ],
  ])(
    'that %s fails the signing with a ProcessError naming the setting, the cause and the fix',
    async (_, make, message) => {
      const s = make();
      const err = await s.sign(Buffer.from('m')).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ProcessError);
      expect((err as Error).message).toMatch(message);
    },
  );

  test('a program that is not there fails naming it; a malformed public key is refused up front', async () => {
    const missing = createCommandSigner({ command: [join(dir, 'nope')], verifierKey: key.verifierKey });
    await expect(missing.sign(Buffer.from('m'))).rejects.toThrow(
      /audit\.signer: the signer command .*nope could not be started: .*ENOENT/,
    );
    expect(() => createCommandSigner({ command: ['x'], verifierKey: 'not-a-key' })).toThrow(ConfigError);
    expect(() => createCommandSigner({ command: ['x'], verifierKey: 'not-a-key' })).toThrow(
      /^audit\.signer\.publicKey: a verifier key has the form/,
    );
    expect(() => createCommandSigner({ command: [], verifierKey: key.verifierKey })).toThrow(/command: empty/);
  });
});

describe('checkSigner', () => {
  test('has a command sign a probe, and reads a key file, before anything else runs; names only public halves', async () => {
    const ok = await checkSigner({
      kind: 'command',
      command: [process.execPath, script, seedFile, 'sign'],
      verifierKey: key.verifierKey,
    });
    expect(ok).toEqual({ kind: 'command', verifierKey: key.verifierKey });
    await expect(
      checkSigner({
        kind: 'command',
        command: [process.execPath, script, seedFile, 'fail'],
        verifierKey: key.verifierKey,
      }),
    ).rejects.toThrow(/exited 3/);
    const file = join(dir, 'audit.key');
    await writeSigningKeyFile(file, key);
    expect(await checkSigner({ kind: 'key-file', path: file })).toEqual({
      kind: 'key-file',
      verifierKey: key.verifierKey,
    });
    expect(JSON.stringify(ok)).not.toContain(formatSigningKey(key).split('+').at(-1));
    await expect(checkSigner({ kind: 'key-file', path: join(dir, 'none.key') })).rejects.toThrow(
      /cannot read signing key/,
    );
  });
});
