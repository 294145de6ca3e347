import { readFileSync } from 'node:fs';
import { basename, dirname, extname, isAbsolute, resolve } from 'node:path';
import { HandoffPlanSchema } from '@baton/core';
import { ConfigError } from '@baton/errors';
import { type Document, LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';

const Name = z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a lowercase DNS label (a-z, 0-9, -)');
const LabelValue = z.string().max(63);

/**
 * A handoff plan without its cluster: what every cluster of the fleet shares. Strings may hold `{{name}}` (the
 * cluster's name) and `{{labels.KEY}}` (one of its labels); a section given here is a complete section of the plan.
 */
// Built from the plan's shape: the plan's own refinements (across sections) run when each cluster's plan is parsed.
const { apiVersion: _apiVersion, kind: _kind, cluster: _cluster, ...templateShape } = HandoffPlanSchema.shape;
export const PlanTemplateSchema = z
  .strictObject(templateShape)
  .partial()
  .describe(
    'a handoff plan without cluster: strings may hold {{name}} and {{labels.KEY}}; sections given are complete',
  );

/** Where a cluster's kubeconfig comes from on the management cluster (Cluster API writes `<name>-kubeconfig`). */
export const SecretRefSchema = z.strictObject({
  name: Name.describe('Secret name, e.g. Cluster API’s <cluster>-kubeconfig'),
  namespace: Name.default('default').describe('namespace of the Secret on the management cluster'),
  key: z.string().min(1).default('value').describe('data key holding the kubeconfig (Cluster API: value)'),
});

/** One cluster of the fleet. */
export const FleetClusterSchema = z
  .strictObject({
    name: Name.describe('cluster name: in audit records, {{name}} in the plan template, --shard slices'),
    kubeconfig: z.string().min(1).optional().describe('kubeconfig path, relative to the fleet file'),
    context: z.string().min(1).optional().describe('kubeconfig context (of `kubeconfig`, else of --kubeconfig)'),
    secretRef: SecretRefSchema.optional().describe(
      'kubeconfig from a Secret on the management cluster (--management-kubeconfig)',
    ),
    labels: z.record(z.string(), LabelValue).default({}).describe('labels that wave selectors match'),
    overrides: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('plan fields for this cluster only, deep-merged over defaults (objects merge, lists replace)'),
  })
  .refine((c) => !(c.kubeconfig !== undefined && c.secretRef !== undefined), {
    message: 'set kubeconfig (a path) or secretRef (a Secret on the management cluster), not both',
    path: ['secretRef'],
  });

/** One wave: a label selector, a count or a percentage of the fleet, or (none of them) every cluster left. */
export const WaveSchema = z
  .strictObject({
    name: Name.optional().describe('@default wave-<n>, and canary for the first'),
    selector: z
      .record(z.string(), LabelValue)
      .optional()
      .describe('every cluster not yet in a wave whose labels include all of these'),
    count: z.number().int().positive().optional().describe('the next N clusters not yet in a wave'),
    percent: z
      .number()
      .positive()
      .max(100)
      .optional()
      .describe('the next ceil(P% of the fleet) clusters not yet in a wave'),
  })
  .refine((w) => [w.selector, w.count, w.percent].filter((x) => x !== undefined).length <= 1, {
    message: 'use at most one of selector, count and percent (none: every cluster left)',
  });

/** A count of clusters, or a percentage of the fleet (`"10%"`). */
export const BudgetSchema = z.union([
  z.number().int().nonnegative(),
  z.string().regex(/^\d+(\.\d+)?%$/, 'must be a whole number or a percentage like "10%"'),
]);

/** The Job engine's pod settings. */
export const JobSettingsSchema = z.strictObject({
  image: z
    .string()
    .min(1)
    .optional()
    .describe('image that runs `baton fleet shard`; @default the baton CLI image this release pins by digest'),
  namespace: Name.default('baton-fleet').describe('namespace of the Jobs, journals and kubeconfig Secrets'),
  serviceAccountName: Name.default('baton-fleet-shard').describe('identity of the shard pods'),
  podLabels: z.record(z.string(), LabelValue).optional().describe('extra labels on the shard pods'),
});

/** `fleet.yaml`: many clusters handed off in waves, with a failure budget. */
export const FleetFileSchema = z
  .strictObject({
    apiVersion: z.literal('baton.dev/v1alpha1'),
    kind: z.literal('Fleet'),
    name: Name.optional().describe('@default the file name without extension'),
    defaults: z
      .union([z.string().min(1), PlanTemplateSchema])
      .describe('the plan template: inline, or the path of a plan file (relative to the fleet file)'),
    clusters: z.array(FleetClusterSchema).min(1).max(5000),
    waves: z
      .array(WaveSchema)
      .min(1)
      .default([{ name: 'canary', count: 1 }, { name: 'rest' }])
      .describe('in order; the first is the canary. @default a canary of one, then the rest'),
    concurrency: z.number().int().min(1).max(256).default(4).describe('handoffs at once within a wave'),
    failureBudget: BudgetSchema.default(0).describe(
      'failed clusters the run tolerates (count, or % of the clusters this run hands off); one more halts it',
    ),
    retries: z
      .number()
      .int()
      .min(0)
      .max(10)
      .default(0)
      .describe('extra attempts per cluster before it counts as failed'),
    job: JobSettingsSchema.optional().describe('settings of --engine job'),
  })
  .superRefine((f, ctx) => {
    const seen = new Map<string, number>();
    f.clusters.forEach((c, i) => {
      const first = seen.get(c.name);
      if (first !== undefined)
        ctx.addIssue({ code: 'custom', path: ['clusters', i, 'name'], message: `repeats clusters[${first}].name` });
      seen.set(c.name, i);
    });
  })
  .describe('baton fleet file');

/** A validated fleet file with defaults applied. */
export type FleetFile = z.infer<typeof FleetFileSchema>;
/** One cluster of a fleet file. */
export type FleetCluster = z.infer<typeof FleetClusterSchema>;
/** A plan template (inline defaults). */
export type PlanTemplate = z.infer<typeof PlanTemplateSchema>;

/** A fleet file, its template resolved, with the folders relative paths resolve against. */
export interface LoadedFleet {
  /** The fleet file. */
  readonly file: string;
  readonly name: string;
  readonly fleet: FleetFile;
  /** The plan template as written (raw: `{{…}}` still in it), read from `defaults` or the file it names. */
  readonly template: Record<string, unknown>;
  /** Where the template came from (the fleet file or the plan file it names). */
  readonly templateFile: string;
  /** Relative paths in the template and overrides resolve here (the template file's folder). */
  readonly planBaseDir: string;
  /** Relative cluster kubeconfig paths resolve here (the fleet file's folder). */
  readonly baseDir: string;
}

/**
 * Reads and validates a fleet file (YAML 1.1).
 * @throws {ConfigError} naming the file, the line, the cluster and the field.
 */
export function loadFleetFile(file: string): LoadedFleet {
  const text = readText(file, 'fleet file', 'pass a readable fleet file');
  return parseFleetText(text, file);
}

/**
 * Validates fleet file text (`file` names it in errors and sets the base folder).
 * @throws {ConfigError} naming the file, the line, the cluster and the field.
 */
export function parseFleetText(text: string, file: string): LoadedFleet {
  const { doc, lines } = parseYaml(text, file);
  const raw = doc.toJS() as unknown;
  const r = FleetFileSchema.safeParse(raw);
  if (!r.success) throw schemaError(file, r.error, raw, doc, lines);
  const baseDir = dirname(resolve(file));
  const fleet = r.data;
  let template: Record<string, unknown>;
  let templateFile = file;
  if (typeof fleet.defaults === 'string') {
    templateFile = isAbsolute(fleet.defaults) ? fleet.defaults : resolve(baseDir, fleet.defaults);
    const t = parseYaml(readText(templateFile, 'plan template', `fix defaults in ${file}`), templateFile);
    const tpl = (t.doc.toJS() ?? {}) as Record<string, unknown>;
    // A full plan file works as a template: its own cluster section is replaced per cluster.
    const { apiVersion: _a, kind: _k, cluster: _c, ...rest } = tpl;
    const tr = PlanTemplateSchema.safeParse(rest);
    if (!tr.success) throw schemaError(templateFile, tr.error, rest, t.doc, t.lines);
    template = rest;
  } else {
    template = ((raw as { defaults?: Record<string, unknown> }).defaults ?? {}) as Record<string, unknown>;
  }
  return {
    file,
    name: fleet.name ?? basename(file, extname(file)).replace(/[^a-z0-9-]/g, '-'),
    fleet,
    template,
    templateFile,
    planBaseDir: dirname(resolve(templateFile)),
    baseDir,
  };
}

function readText(file: string, what: string, fix: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read ${what} ${file}: ${(err as Error).message}; ${fix}`, { cause: err });
  }
}

function parseYaml(text: string, file: string): { doc: Document; lines: LineCounter } {
  const lines = new LineCounter();
  const doc = parseDocument(text, { version: '1.1', lineCounter: lines });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    throw new ConfigError(`${file}:${e.linePos?.[0]?.line ?? '?'}: ${e.message}`);
  }
  return { doc, lines };
}

/** A schema error as `file:line: cluster "x" (clusters[2]): field: rule`, every issue on its own line. */
function schemaError(file: string, error: z.ZodError, raw: unknown, doc: Document, lines: LineCounter): ConfigError {
  const issues = error.issues.map((issue) => {
    const path = issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
    return { path, where: describeIssuePath(path, raw), line: lineOf(doc, lines, path), message: issue.message };
  });
  const text = issues.map((i) => `${file}${i.line ? `:${i.line}` : ''}: ${i.where}: ${i.message}`).join('\n');
  return new ConfigError(`invalid fleet file: ${text}`, {
    details: { file, issues: issues.map((i) => ({ path: i.path.join('.'), line: i.line, message: i.message })) },
  });
}

/** `cluster "eu-1" (clusters[0]) secretRef.name`, or the plain dotted path outside clusters. */
export function describeIssuePath(path: readonly (string | number)[], raw: unknown): string {
  if (path[0] === 'clusters' && typeof path[1] === 'number') {
    const name = (raw as { clusters?: { name?: unknown }[] })?.clusters?.[path[1]]?.name;
    const rest = formatPath(path.slice(2));
    return `cluster ${typeof name === 'string' ? `"${name}" ` : ''}(clusters[${path[1]}])${rest ? ` ${rest}` : ''}`;
  }
  return formatPath(path) || '(top level)';
}

function formatPath(path: readonly (string | number)[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i > 0 ? '.' : ''}${p}`)).join('');
}

function lineOf(doc: Document, lines: LineCounter, path: readonly (string | number)[]): number | undefined {
  // The deepest node that exists: a missing field is reported at its parent.
  for (let n = path.length; n >= 0; n--) {
    const node = doc.getIn(path.slice(0, n), true) as { range?: [number, number, number] } | undefined;
    if (node?.range) return lines.linePos(node.range[0]).line;
  }
  return undefined;
}

/** The JSON Schema of a fleet file, for editors (`schemas/fleet.schema.json`). */
export function fleetJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(FleetFileSchema, { io: 'input', target: 'draft-2020-12' }) as Record<string, unknown>;
}
