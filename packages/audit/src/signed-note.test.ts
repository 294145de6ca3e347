import { inspect } from 'node:util';
import { describe, expect, test } from 'vitest';
import { formatCheckpoint, parseCheckpoint } from './checkpoint.js';
import { parseNote, signNote } from './signed-note.js';
import {
  formatSigningKey,
  generateSigningKey,
  noteKeyId,
  parseSigningKey,
  parseVerifierKey,
  type SigningKey,
  verifyEd25519,
} from './signing-key.js';

// The example key and note of golang.org/x/mod/sumdb/note (the reference implementation of C2SP signed-note).
const VKEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
const SKEY = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz';
const TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const SIG_LINE =
  '\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n';

function peter(): SigningKey {
  const key = parseSigningKey(SKEY);
  if (typeof key === 'string') throw new Error(key);
  return key;
}

describe('C2SP signed-note keys', () => {
  test('the key ID is SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key)[:4], as in the Go reference example', () => {
    const key = peter();
    expect(key.keyId.toString('hex')).toBe('c74f20a3');
    expect(noteKeyId('PeterNeumann', key.publicKey).toString('hex')).toBe('c74f20a3');
    expect(key.verifierKey).toBe(VKEY);
    expect(formatSigningKey(key)).toBe(SKEY);
  });

  test('a verifier key parses only when its hash matches its name and key', () => {
    const v = parseVerifierKey(VKEY);
    expect(typeof v === 'string' ? v : v.keyId.toString('hex')).toBe('c74f20a3');
    expect(parseVerifierKey(VKEY.replace('c74f20a3', 'c74f20a4'))).toMatch(/does not match/);
    expect(parseVerifierKey(VKEY.replace('PeterNeumann', 'PeterNeumanm'))).toMatch(/does not match/);
    expect(parseVerifierKey(VKEY.replace('+ARpc', '+AhRpc'))).toMatch(/33 bytes/);
    expect(parseVerifierKey('PeterNeumann+c74f20a3')).toMatch(/form/);
    expect(parseVerifierKey(VKEY.replace('+ARpc', '+BRpc'))).toMatch(/not Ed25519/);
  });

  test('a signer key with the wrong hash or material is rejected without echoing the secret', () => {
    const wrongHash = SKEY.replace('c74f20a3', '00000000');
    expect(parseSigningKey(wrongHash)).toMatch(/does not match/);
    expect(parseSigningKey(wrongHash)).not.toContain('AYEKFALV');
    expect(parseSigningKey('PRIVATE+KEY+x+00000000+AAAA')).toMatch(/not base64 of an Ed25519 seed/);
    expect(parseSigningKey('hello')).toMatch(/starts with PRIVATE\+KEY\+/);
  });

  test('a signing key never shows its private half in JSON or util.inspect', () => {
    const key = generateSigningKey('inspect-me');
    // The base64 seed may itself contain '+', so take everything after name and hash.
    const seed = formatSigningKey(key).split('+').slice(4).join('+');
    expect(seed.length).toBeGreaterThan(40);
    expect(JSON.stringify(key)).not.toContain(seed);
    expect(inspect(key, { depth: 5, showHidden: true })).not.toContain(seed);
    expect(inspect(key)).toContain('[redacted]');
  });
});

describe('C2SP signed notes', () => {
  test('signing reproduces the Go reference note byte for byte (Ed25519 is deterministic)', async () => {
    expect(await signNote(TEXT, [peter()])).toBe(`${TEXT}\n${SIG_LINE}`);
  });

  test('parsing splits text and signatures; the signature verifies with the verifier key', () => {
    const parsed = parseNote(`${TEXT}\n${SIG_LINE}`);
    if (typeof parsed === 'string') throw new Error(parsed);
    expect(parsed.text).toBe(TEXT);
    expect(parsed.signatures).toHaveLength(1);
    const sig = parsed.signatures[0]!;
    expect(sig.name).toBe('PeterNeumann');
    expect(sig.keyId.toString('hex')).toBe('c74f20a3');
    const v = parseVerifierKey(VKEY);
    if (typeof v === 'string') throw new Error(v);
    expect(verifyEd25519(v.keyObject, Buffer.from(TEXT), sig.signature)).toBe(true);
    expect(verifyEd25519(v.keyObject, Buffer.from(TEXT.replace('cryptography', 'cryptographY')), sig.signature)).toBe(
      false,
    );
  });

  test.each([
    ['no blank line', `${TEXT}${SIG_LINE}`, /no blank line/],
    ['no final newline in the signatures', `${TEXT}\n${SIG_LINE.trimEnd()}`, /does not end in a newline/],
    ['a line without the em dash', `${TEXT}\n- PeterNeumann AAAAAAAA\n`, /does not start with/],
    ['a short signature blob', `${TEXT}\n\u2014 PeterNeumann AAAA\n`, /not base64/],
    ['control characters in the text', `a\u0007b\n\n${SIG_LINE}`, /control characters/],
    ['invalid UTF-8', Buffer.from([0xff, 0x0a, 0x0a]), /UTF-8/],
  ])('rejects a note with %s', (_, note, reason) => {
    expect(parseNote(note)).toMatch(reason);
  });

  test('several signers each add a line; the text must end in a newline', async () => {
    const a = generateSigningKey('a');
    const b = generateSigningKey('b');
    const note = await signNote('hello\n', [a, b]);
    const parsed = parseNote(note);
    expect(typeof parsed === 'string' ? parsed : parsed.signatures.map((s) => s.name)).toEqual(['a', 'b']);
    await expect(signNote('no newline', [a])).rejects.toThrow(RangeError);
  });
});

describe('C2SP tlog-checkpoint', () => {
  test('a checkpoint body round-trips; extension lines are ignored', () => {
    const cp = { origin: 'example.com/baton/audit', size: 109482, root: Buffer.alloc(32, 7) };
    const text = formatCheckpoint(cp);
    expect(text).toBe(`example.com/baton/audit\n109482\n${Buffer.alloc(32, 7).toString('base64')}\n`);
    expect(parseCheckpoint(text)).toEqual(cp);
    expect(parseCheckpoint(`${text}extension line\n`)).toEqual(cp);
  });

  test.each([
    ['a leading zero in the size', 'o\n012\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n', /size/],
    ['a negative size', 'o\n-1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n', /size/],
    ['a short root', 'o\n1\nAAAA\n', /32-byte/],
    ['two lines', 'o\n1\n', /at least 3 lines/],
    ['an empty origin', '\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n', /origin/],
  ])('rejects a checkpoint with %s', (_, text, reason) => {
    expect(parseCheckpoint(text)).toMatch(reason);
  });
});
