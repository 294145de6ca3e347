import { z } from 'zod';
import { FleetRecordSchema, FleetStatementSchema } from './fleet-record.js';
import { LogEntrySchema } from './handoff-event.js';
import { HandoffRecordSchema } from './handoff-record.js';
import { HandoffStatementSchema } from './statement.js';
import { TrustedKeysFileSchema } from './trusted-keys.js';

/** The JSON Schemas published in `packages/audit/schemas/`, generated from the zod schemas (file name → schema). */
export function jsonSchemas(): Record<string, unknown> {
  // Refinements (e.g. "handed-off needs a revocation") cannot be expressed in JSON Schema; zod drops them here and
  // enforces them at runtime.
  const gen = (schema: z.ZodType, id: string) => ({
    $id: `https://baton.dev/schemas/${id}`,
    ...z.toJSONSchema(schema, { target: 'draft-2020-12', unrepresentable: 'throw', io: 'input' }),
  });
  return {
    'fleet-record.schema.json': gen(FleetRecordSchema, 'fleet-record.schema.json'),
    'fleet-statement.schema.json': gen(FleetStatementSchema, 'fleet-statement.schema.json'),
    'handoff-record.schema.json': gen(HandoffRecordSchema, 'handoff-record.schema.json'),
    'handoff-statement.schema.json': gen(HandoffStatementSchema, 'handoff-statement.schema.json'),
    'log-entry.schema.json': gen(LogEntrySchema, 'log-entry.schema.json'),
    'trusted-keys.schema.json': gen(TrustedKeysFileSchema, 'trusted-keys.schema.json'),
  };
}

/** The exact text written for a schema file (stable formatting, trailing newline). */
export function formatJsonSchema(schema: unknown): string {
  return `${JSON.stringify(schema, null, 2)}\n`;
}
