// Writes schemas/fleet.schema.json from the zod schema; `fleet-file.test.ts` fails when it is stale.
import { writeFileSync } from 'node:fs';
import { fleetJsonSchema } from '../src/fleet-file.js';

writeFileSync(
  new URL('../schemas/fleet.schema.json', import.meta.url),
  `${JSON.stringify(fleetJsonSchema(), null, 2)}\n`,
);
