const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * RFC 8785 JSON Canonicalization Scheme (JCS): object members sorted by their names' UTF-16 code units, no
 * whitespace, strings escaped as ECMAScript's JSON.stringify escapes them, numbers in ECMAScript's shortest
 * round-trip form (RFC 8785 §3.2.2.3 adopts exactly that algorithm). Members whose value is `undefined` are left out,
 * as JSON.stringify leaves them out. The `canonicalize` package does the same but needs Node 22; this is its
 * algorithm in a few lines (tests: RFC 8785's examples).
 * @throws {TypeError} for a value JSON cannot hold (NaN, Infinity, a bigint, a function, a lone surrogate).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean') return String(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`canonicalJson: ${value} is not a JSON number`);
    return JSON.stringify(value);
  }
  if (typeof value === 'string') {
    // I-JSON (RFC 7493), which JCS requires, has no lone surrogates.
    if (LONE_SURROGATE.test(value)) throw new TypeError('canonicalJson: a string holds a lone surrogate');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  if (typeof value === 'object') {
    const o = value as Record<string, unknown>;
    const keys = Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${canonicalJson(k)}:${canonicalJson(o[k])}`).join(',')}}`;
  }
  throw new TypeError(`canonicalJson: a ${typeof value} is not JSON`);
}
