import { describe, expect, it } from 'vitest';
import { withSchemaDefaults } from './expected-objects.js';

describe('withSchemaDefaults', () => {
  it('fills absent properties with their defaults, descending into present ones', () => {
    const schema = {
      type: 'object',
      properties: {
        spec: {
          type: 'object',
          properties: {
            ref: { type: 'object', default: { branch: 'main' } },
            interval: { type: 'string', default: '1m' },
            items: { type: 'array', items: { type: 'object', properties: { x: { type: 'integer', default: 1 } } } },
          },
        },
      },
    };
    expect(withSchemaDefaults({ spec: { interval: '5m', items: [{}, { x: 2 }] } }, schema)).toEqual({
      spec: { interval: '5m', ref: { branch: 'main' }, items: [{ x: 1 }, { x: 2 }] },
    });
  });
});
