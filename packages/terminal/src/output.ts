import { stringify } from 'yaml';
import type { Field } from './fields.js';
import { renderFields } from './fields.js';
import type { Screen } from './screen.js';
import type { Column } from './table.js';
import { renderTable } from './table.js';

/** The `-o` formats of every listing and summary: a table that fits, every column (`wide`), or the data. */
export const OUTPUT_FORMATS = ['table', 'wide', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/**
 * Rows in `format`: JSON (two-space indent) or YAML 1.1 of the rows as they are (scripts read these; a table's
 * columns never change them), else a table for `screen`, whole in `wide`. Newline-terminated.
 */
export function renderRows<R extends object>(
  rows: readonly R[],
  format: OutputFormat,
  columns: readonly Column<R>[],
  screen: Pick<Screen, 'width'>,
): string {
  if (format === 'json') return `${JSON.stringify(rows, null, 2)}\n`;
  if (format === 'yaml') return stringify(rows, { version: '1.1' });
  return renderTable(rows, columns, { width: screen.width, wide: format === 'wide' });
}

/** One object in `format`: its data as JSON or YAML, else `key: value` lines (`fields`) for `screen`. */
export function renderObject(
  data: unknown,
  format: OutputFormat,
  fields: readonly Field[],
  screen: Pick<Screen, 'width'>,
): string {
  if (format === 'json') return `${JSON.stringify(data, null, 2)}\n`;
  if (format === 'yaml') return stringify(data, { version: '1.1' });
  return renderFields(fields, { width: screen.width, wide: format === 'wide' });
}

/** `auditEventDigest` → `audit event digest`: a data key as words for a `key: value` line. */
export function words(key: string): string {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase();
}
