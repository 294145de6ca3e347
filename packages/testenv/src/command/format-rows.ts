// The CLI's own copy is packages/cli/src/output/format.ts. Two copies on purpose: `@baton/cli` must not depend on the
// test bed at run time, and the test bed depends on no baton package but errors (nothing imports the CLI), so neither
// can import the other's; a package of its own for eleven lines costs more than the copy.
import Table from 'cli-table3';
import { stringify } from 'yaml';

/** The `-o` formats every listing command accepts. */
export const OUTPUT_FORMATS = ['table', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** Renders rows as a table (the given columns), JSON or YAML 1.1, newline-terminated. */
export function formatRows(
  rows: readonly Record<string, unknown>[],
  format: OutputFormat,
  columns: readonly string[],
): string {
  if (format === 'json') return `${JSON.stringify(rows, null, 2)}\n`;
  if (format === 'yaml') return stringify(rows, { version: '1.1' });
  const table = new Table({ head: columns.map((c) => c.toUpperCase()), style: { head: [], border: [] } });
  for (const r of rows) table.push(columns.map((c) => String(r[c] ?? '')));
  return `${table.toString()}\n`;
}
