import { readFile } from 'node:fs/promises';
import { expect, test } from 'vitest';
import { formatJsonSchema, jsonSchemas } from './json-schemas.js';

test.each(Object.entries(jsonSchemas()))(
  'schemas/%s is up to date (regenerate: pnpm --filter @baton/audit schemas)',
  async (name, schema) => {
    const committed = await readFile(new URL(`../schemas/${name}`, import.meta.url), 'utf8');
    expect(committed).toBe(formatJsonSchema(schema));
  },
);
