import { ConfigError } from '@baton/errors';
import { describe, expect, test } from 'vitest';
import { SigningKey } from './signing-key.js';
import { dsseKeyId, formatTrustedKeys, isKeyValidAt, parseTrustedKeys } from './trusted-keys.js';

const a = SigningKey.fromSeed('audit-2026a', Buffer.alloc(32, 3));
const b = SigningKey.fromSeed('audit-2026b', Buffer.alloc(32, 4));

describe('trusted-keys file', () => {
  test('keygen output parses back, with windows for rotation', () => {
    const text = formatTrustedKeys({
      origin: 'example.com/baton/audit',
      keys: [
        { key: a.verifierKey, validUntil: '2026-06-01T00:00:00Z' },
        { key: b.verifierKey, validFrom: '2026-05-01T00:00:00Z' },
      ],
    });
    expect(text).toMatch(/^# Keys trusted/);
    const set = parseTrustedKeys(text, 'keys.yaml');
    expect(set.origin).toBe('example.com/baton/audit');
    const [ka, kb] = set.keys;
    expect(set.forDsseKeyId(dsseKeyId(a))).toEqual([ka]);
    expect(set.forNoteSignature('audit-2026b', b.keyId)).toEqual([kb]);
    expect(set.forNoteSignature('audit-2026b', a.keyId)).toEqual([]);
    const may = Date.parse('2026-05-15T00:00:00Z');
    expect([isKeyValidAt(ka!, may), isKeyValidAt(kb!, may)]).toEqual([true, true]);
    const july = Date.parse('2026-07-01T00:00:00Z');
    expect([isKeyValidAt(ka!, july), isKeyValidAt(kb!, july)]).toEqual([false, true]);
  });

  test('a bad key names the file, the line and the field', () => {
    const text = `origin: o\nkeys:\n  - key: ${a.verifierKey}\n  - key: nope+12345678+AAAA\n`;
    expect(() => parseTrustedKeys(text, 'keys.yaml')).toThrow(ConfigError);
    expect(() => parseTrustedKeys(text, 'keys.yaml')).toThrow(
      /^keys.yaml:4: keys\[1\]\.key: not a valid Ed25519 verifier key/,
    );
  });

  test('YAML syntax errors and typos are reported with their line', () => {
    expect(() => parseTrustedKeys('origin: o\nkeys: [\n', 'k.yaml')).toThrow(/^k.yaml:\d+: not valid YAML/);
    expect(() => parseTrustedKeys(`origin: o\nkeys:\n  - key: ${a.verifierKey}\n    validfrom: x\n`, 'k.yaml')).toThrow(
      /^k.yaml:3: keys\[0\]: Unrecognized key: "validfrom"/,
    );
    expect(() =>
      parseTrustedKeys(`origin: o\nkeys:\n  - key: ${a.verifierKey}\n    validFrom: yesterday\n`, 'k.yaml'),
    ).toThrow(/^k.yaml:4: keys\[0\]\.validFrom: Invalid ISO datetime/);
  });

  test('JSON is accepted too', () => {
    const set = parseTrustedKeys(JSON.stringify({ origin: 'o', keys: [{ key: a.verifierKey }] }), 'k.json');
    expect(set.keys).toHaveLength(1);
  });
});
