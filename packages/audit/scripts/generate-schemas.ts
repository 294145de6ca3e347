// Writes packages/audit/schemas/*.schema.json from the zod schemas. Run: pnpm --filter @baton/audit schemas
// A unit test (json-schemas.test.ts) fails when the committed files are stale.
import { writeFile } from 'node:fs/promises';
import { formatJsonSchema, jsonSchemas } from '../src/json-schemas.js';

const dir = new URL('../schemas/', import.meta.url);
for (const [name, schema] of Object.entries(jsonSchemas())) {
  await writeFile(new URL(name, dir), formatJsonSchema(schema));
  process.stdout.write(`wrote schemas/${name}\n`);
}
