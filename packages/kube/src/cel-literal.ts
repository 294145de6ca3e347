/**
 * A JSON value as a CEL literal. JSON string escapes are a subset of CEL's, so `JSON.stringify` quotes strings;
 * maps and lists compare by value in CEL, so a literal can be compared with `==` to a field of the admitted object.
 * @throws {Error} on a value JSON cannot carry (a function, a symbol, a non-finite number).
 */
export function celLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`celLiteral: ${value} has no CEL literal`);
    // Admitted objects carry JSON integers as int64 and fractions as double, as these literals do.
    return String(value);
  }
  if (Array.isArray(value)) {
    const wrap = wrapper(value);
    return `[${value.map((v) => wrap(celLiteral(v))).join(', ')}]`;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    const wrap = wrapper(entries.map(([, v]) => v));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${wrap(celLiteral(v))}`).join(', ')}}`;
  }
  throw new Error(`celLiteral: a ${typeof value} has no CEL literal`);
}

// The API server's CEL checks aggregate literals as homogeneous (`{"a": "x", "b": 1}` does not compile): when
// siblings' CEL types differ, each is wrapped in dyn(), which keeps its value and equality.
function wrapper(values: readonly unknown[]): (literal: string) => string {
  return new Set(values.map(celType)).size <= 1 ? (l) => l : (l) => `dyn(${l})`;
}

/** The CEL type a literal of `v` checks as (aggregates of mixed types are dyn-wrapped, so their element is dyn). */
function celType(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'double';
  if (typeof v === 'string' || typeof v === 'boolean') return typeof v;
  const members = Array.isArray(v) ? v : Object.values(v as object).filter((x) => x !== undefined);
  const types = new Set(members.map(celType));
  const member = types.size === 1 ? [...types][0] : 'dyn';
  return Array.isArray(v) ? `list(${member})` : `map(string, ${member})`;
}

/** `a.b.c` for CEL field selection, or index syntax where a key is not an identifier. */
export function celSelect(base: string, key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) && !CEL_RESERVED.has(key)
    ? `${base}.${key}`
    : `${base}[${JSON.stringify(key)}]`;
}

/** `has()` for one key of a map: `has(a.b)` where selection works, `"k" in a` otherwise. */
export function celHas(base: string, key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) && !CEL_RESERVED.has(key)
    ? `has(${base}.${key})`
    : `${JSON.stringify(key)} in ${base}`;
}

// CEL reserves these words; Kubernetes escapes them in field names (`__namespace__`), we use index syntax instead.
const CEL_RESERVED = new Set([
  'true',
  'false',
  'null',
  'in',
  'as',
  'break',
  'const',
  'continue',
  'else',
  'for',
  'function',
  'if',
  'import',
  'let',
  'loop',
  'package',
  'namespace',
  'return',
  'var',
  'void',
  'while',
]);
