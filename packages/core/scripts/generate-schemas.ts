// Writes schemas/*.schema.json from the zod schemas; `handoff-plan.test.ts` and `profile.test.ts` fail when stale.
import { writeFileSync } from 'node:fs';
import { handoffPlanJsonSchema } from '../src/handoff-plan.js';
import { profileJsonSchema } from '../src/profile.js';

const write = (name: string, schema: Record<string, unknown>) =>
  writeFileSync(new URL(`../schemas/${name}`, import.meta.url), `${JSON.stringify(schema, null, 2)}\n`);
write('handoff-plan.schema.json', handoffPlanJsonSchema());
write('profile.schema.json', profileJsonSchema());
