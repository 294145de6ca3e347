import { describe, expect, test } from 'vitest';
import { preAuthEncoding, signEnvelope } from './dsse.js';
import { decodeStrictBase64, generateSigningKey, publicKeyObject, verifyEd25519 } from './signing-key.js';

describe('DSSE v1', () => {
  test('PAE matches the example in the DSSE protocol spec', () => {
    expect(preAuthEncoding('http://example.com/HelloWorld', Buffer.from('hello world')).toString()).toBe(
      'DSSEv1 29 http://example.com/HelloWorld 11 hello world',
    );
  });

  test('PAE counts bytes, not characters', () => {
    expect(preAuthEncoding('t', Buffer.from('é', 'utf8')).toString('utf8')).toBe('DSSEv1 1 t 2 é');
  });

  test('an envelope carries base64 payload, the type and one signature per signer over PAE', async () => {
    const a = generateSigningKey('a');
    const b = generateSigningKey('b');
    const payload = Buffer.from('{"x":1}');
    const env = await signEnvelope('application/vnd.in-toto+json', payload, [a, b]);
    expect(Object.keys(env)).toEqual(['payload', 'payloadType', 'signatures']);
    expect(env.signatures.map((s) => s.keyid)).toEqual([
      `a+${a.keyId.toString('hex')}`,
      `b+${b.keyId.toString('hex')}`,
    ]);
    const pae = preAuthEncoding(env.payloadType, decodeStrictBase64(env.payload)!);
    expect(verifyEd25519(publicKeyObject(a.publicKey), pae, decodeStrictBase64(env.signatures[0]!.sig)!)).toBe(true);
    expect(
      verifyEd25519(
        publicKeyObject(a.publicKey),
        preAuthEncoding('other', payload),
        decodeStrictBase64(env.signatures[0]!.sig)!,
      ),
    ).toBe(false);
  });

  test('strict base64 rejects junk, URL-safe letters and non-canonical padding', () => {
    expect(decodeStrictBase64('aGk=')?.toString()).toBe('hi');
    expect(decodeStrictBase64('aGk')).toBeUndefined();
    expect(decodeStrictBase64('aG!=')).toBeUndefined();
    expect(decodeStrictBase64('a-_=')).toBeUndefined();
    expect(decodeStrictBase64('aGl=')).toBeUndefined();
  });
});
