import { Environment } from '@marcbachmann/cel-js';
import { describe, expect, it } from 'vitest';
import { celLiteral } from './cel-literal.js';

const cel = new Environment({ unlistedVariablesAreDyn: true });

describe('celLiteral', () => {
  it('writes JSON values as CEL literals that compare by value', () => {
    expect(celLiteral({ a: [1, 'x"y', true, null], b: 2.5 })).toBe(
      '{"a": dyn([dyn(1), dyn("x\\"y"), dyn(true), dyn(null)]), "b": dyn(2.5)}',
    );
    expect(celLiteral({ a: { x: 'y' }, b: { z: 1 }, c: { w: 'v' } })).toBe(
      '{"a": dyn({"x": "y"}), "b": dyn({"z": 1}), "c": dyn({"w": "v"})}',
    );
    expect(celLiteral({ a: 'x', b: 'y' })).toBe('{"a": "x", "b": "y"}');
    expect(celLiteral([1, 2])).toBe('[1, 2]');
    expect(() => celLiteral(Number.NaN)).toThrow(/no CEL literal/);
  });

  it('evaluates to the value it was made from, mixed types included, in a CEL that requires homogeneous literals', () => {
    const value = { a: [1, 'x"y', true, null], b: 2.5, c: { d: ['e'], f: { g: 1 } }, 'h-i': 'j' };
    expect(cel.evaluate(`${celLiteral(value)} == v`, { v: value })).toBe(true);
    expect(cel.evaluate(`${celLiteral(value)} == v`, { v: { ...value, b: 3.5 } })).toBe(false);
  });
});
