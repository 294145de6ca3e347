// Writes schemas/handoff-plan.schema.json from the zod schema; `handoff-plan.test.ts` fails when it is stale.
import { writeFileSync } from 'node:fs';
import { handoffPlanJsonSchema } from '../src/handoff-plan.js';

writeFileSync(
  new URL('../schemas/handoff-plan.schema.json', import.meta.url),
  `${JSON.stringify(handoffPlanJsonSchema(), null, 2)}\n`,
);
