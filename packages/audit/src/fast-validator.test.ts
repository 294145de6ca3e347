import { describe, expect, test } from 'vitest';
import { z } from 'zod';
import { compileValidator, fastSafeParse } from './fast-validator.js';
import { createHandoffEvent, LogEntrySchema, serializeEntry } from './handoff-event.js';
import { SigningKey } from './signing-key.js';
import { buildStatement, HandoffStatementSchema } from './statement.js';
import { synthRecords } from './synth.js';

// A small deterministic PRNG so failures reproduce.
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const REPLACEMENTS: unknown[] = [
  '',
  'x',
  'sha256:zz',
  '2026-13-01T00:00:00Z',
  '2026-01-01T00:00:00Z',
  'https://a',
  'nope nope',
  -1,
  0,
  1.5,
  401,
  1e300,
  true,
  null,
  [],
  {},
  ['a'],
  { a: 1 },
];

/** Returns a deep copy of `value` with one random change somewhere in it. */
function mutate(value: unknown, next: () => number): unknown {
  const copy = structuredClone(value) as Record<string, unknown>;
  const paths: { parent: Record<string, unknown> | unknown[]; key: string | number }[] = [];
  const walk = (v: unknown) => {
    if (Array.isArray(v))
      v.forEach((x, i) => {
        paths.push({ parent: v, key: i });
        walk(x);
      });
    else if (v && typeof v === 'object')
      for (const [k, x] of Object.entries(v)) {
        paths.push({ parent: v as Record<string, unknown>, key: k });
        walk(x);
      }
  };
  walk(copy);
  const { parent, key } = paths[Math.floor(next() * paths.length)]!;
  const roll = next();
  const target = parent as Record<string | number, unknown>;
  if (roll < 0.15 && !Array.isArray(parent)) delete target[key];
  else if (roll < 0.25 && !Array.isArray(parent)) target[`${String(key)}X`] = 1;
  else if (roll < 0.35 && typeof target[key] === 'string') target[key] = `${target[key] as string}\u0000`;
  else if (roll < 0.45 && typeof target[key] === 'string') target[key] = (target[key] as string).slice(1);
  else if (roll < 0.5 && typeof target[key] === 'number') target[key] = (target[key] as number) + 0.5;
  else target[key] = REPLACEMENTS[Math.floor(next() * REPLACEMENTS.length)];
  return copy;
}

const key = SigningKey.fromSeed('fv', Buffer.alloc(32, 5));
const records = [...synthRecords(150, { seed: 21 })];
const statements = records.map(buildStatement);
const entries = await Promise.all(
  records.map(async (r, i) =>
    JSON.parse(serializeEntry(await createHandoffEvent(r, key), i, '2027-01-01T00:00:00.000Z')),
  ),
);

describe('fast validator', () => {
  test.each([
    ['statement', HandoffStatementSchema, statements],
    ['log entry', LogEntrySchema, entries],
  ] as const)('accepts exactly what zod accepts for valid and mutated %s values', (_, schema, values) => {
    const fast = compileValidator(schema as z.ZodType);
    expect(fast).toBeDefined();
    const next = prng(42);
    let rejected = 0;
    for (const v of values) {
      expect(fast!(v)).toBe(true);
      for (let k = 0; k < 25; k++) {
        const m = mutate(v, next);
        const zod = schema.safeParse(m).success;
        expect(fast!(m), JSON.stringify(m).slice(0, 400)).toBe(zod);
        if (!zod) rejected++;
      }
    }
    // The mutations must actually exercise rejection, or this test proves nothing.
    expect(rejected).toBeGreaterThan(values.length * 10);
  });

  test('rejections fall back to zod, so messages are zod’s', () => {
    const parse = fastSafeParse(HandoffStatementSchema);
    const bad = structuredClone(statements[0]!) as { predicate: { cluster: { caFingerprint: string } } };
    bad.predicate.cluster.caFingerprint = 'md5:abc';
    const r = parse(bad);
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(['predicate', 'cluster', 'caFingerprint']);
  });

  test('a schema with transforms or defaults is not compiled (zod only)', () => {
    expect(compileValidator(z.object({ a: z.string().default('x') }))).toBeUndefined();
    expect(compileValidator(z.string().transform((s) => s.length))).toBeUndefined();
    expect(compileValidator(z.object({ a: z.string() }))).toBeUndefined();
    expect(compileValidator(z.strictObject({ a: z.string() }))).toBeDefined();
  });

  test('a loose object (a DSSE envelope) is compiled and keeps unknown keys; a strict one refuses them', () => {
    const loose = compileValidator(z.looseObject({ a: z.string() }))!;
    expect(loose({ a: 'x', extra: 1 })).toBe(true);
    expect(loose({ extra: 1 })).toBe(false);
    expect(compileValidator(z.strictObject({ a: z.string() }))!({ a: 'x', extra: 1 })).toBe(false);
  });
});
