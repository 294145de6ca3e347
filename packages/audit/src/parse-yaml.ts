import { ConfigError } from '@baton/errors';
import { isNode, LineCounter, parseDocument } from 'yaml';
import type { z } from 'zod';

/**
 * Parses a user's YAML (1.1, as kubectl reads it; JSON is valid too) and validates it with `schema`.
 * Timestamps stay strings: YAML 1.1 would otherwise turn them into Dates before the schema sees them.
 * @throws {ConfigError} naming `file`, the line and the rule broken, for bad YAML or a schema violation.
 */
export function parseYaml<S extends z.ZodType>(text: string, file: string, schema: S, fix: string): z.infer<S> {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, {
    version: '1.1',
    lineCounter,
    prettyErrors: false,
    customTags: (tags) => tags.filter((t) => typeof t === 'string' || t.tag !== 'tag:yaml.org,2002:timestamp'),
  });
  const yamlError = doc.errors[0];
  if (yamlError) {
    const line = lineCounter.linePos(yamlError.pos[0]).line;
    throw new ConfigError(`${file}:${line}: not valid YAML: ${firstLine(yamlError.message)}; ${fix}`);
  }
  const result = schema.safeParse(doc.toJS());
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const node = doc.getIn(issue.path as (string | number)[], true);
  const offset = isNode(node) && node.range ? node.range[0] : 0;
  const where = issue.path.length > 0 ? `${formatPath(issue.path)}: ` : '';
  throw new ConfigError(`${file}:${lineCounter.linePos(offset).line}: ${where}${issue.message}; ${fix}`, {
    details: { file, path: formatPath(issue.path) },
  });
}

/** Formats a zod issue path the way messages name fields: `keys[0].validFrom`. */
export function formatPath(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${String(p)}`)).join('');
}

function firstLine(text: string): string {
  return text.split('\n')[0] ?? text;
}
