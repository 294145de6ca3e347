import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonical-json.js';

describe('canonicalJson (RFC 8785 JCS)', () => {
  it('serializes the example of RFC 8785 §3.2.2 byte for byte', () => {
    const input = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}',
    );
    expect(canonicalJson(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it('sorts member names by UTF-16 code units (RFC 8785 §3.2.3)', () => {
    const input = JSON.parse(
      '{"\\u20ac": "Euro Sign", "\\r": "Carriage Return", "\\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One", "\\ud83d\\ude00": "Emoji: Grinning Face", "\\u0080": "Control", "\\u00f6": "Latin Small Letter O With Diaeresis"}',
    );
    // Values in the order RFC 8785 lists them (read from the text: JSON.parse would put the key "1" first).
    const order = [...canonicalJson(input).matchAll(/:"([^"]+)"/g)].map((m) => m[1]);
    expect(order).toEqual([
      'Carriage Return',
      'One',
      'Control',
      'Latin Small Letter O With Diaeresis',
      'Euro Sign',
      'Emoji: Grinning Face',
      'Hebrew Letter Dalet With Dagesh',
    ]);
  });

  it('formats numbers as RFC 8785 Appendix B does', () => {
    const cases: [number, string][] = [
      [0, '0'],
      [-0, '0'],
      [Number.MIN_VALUE, '5e-324'],
      [Number.MAX_SAFE_INTEGER, '9007199254740991'],
      [1.7976931348623157e308, '1.7976931348623157e+308'],
      [9007199254740992, '9007199254740992'],
      [295147905179352830000, '295147905179352830000'],
      [1e21, '1e+21'],
      [0.000001, '0.000001'],
      [1e-7, '1e-7'],
    ];
    for (const [n, text] of cases) expect(canonicalJson(n)).toBe(text);
  });

  it('gives the same text whatever the key order, nested too; undefined members are left out', () => {
    const a = { kind: 'Secret', metadata: { name: 'x', labels: { b: '1', a: '2' } }, data: undefined };
    const b = { metadata: { labels: { a: '2', b: '1' }, name: 'x' }, kind: 'Secret' };
    expect(canonicalJson(a)).toBe(canonicalJson(b));
    expect(canonicalJson(a)).toBe('{"kind":"Secret","metadata":{"labels":{"a":"2","b":"1"},"name":"x"}}');
    expect(
      createHash('sha256')
        .update(canonicalJson([a]))
        .digest('hex'),
    ).toBe(
      createHash('sha256')
        .update(canonicalJson([b]))
        .digest('hex'),
    );
  });

  it('refuses what JSON cannot hold', () => {
    expect(() => canonicalJson(Number.NaN)).toThrow(TypeError);
    expect(() => canonicalJson(Number.POSITIVE_INFINITY)).toThrow(TypeError);
    expect(() => canonicalJson('\ud800')).toThrow(/lone surrogate/);
    expect(() => canonicalJson(1n)).toThrow(TypeError);
  });
});
