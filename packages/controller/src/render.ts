import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { ConfigError } from '@baton/errors';
import type { RestObject } from '@baton/kube/rest';
import { parseAllDocuments } from 'yaml';

/** One object rendered from Git, with where it came from (for messages). */
export interface RenderedObject {
  readonly object: RestObject;
  /** Path relative to the repository root, and the document index in that file. */
  readonly source: { readonly file: string; readonly doc: number };
}

// Install order for the rest, as Helm orders kinds: identities and policy before workloads.
const KIND_ORDER = [
  'CustomResourceDefinition',
  'Namespace',
  'ResourceQuota',
  'LimitRange',
  'PriorityClass',
  'ServiceAccount',
  'Secret',
  'ConfigMap',
  'StorageClass',
  'PersistentVolume',
  'PersistentVolumeClaim',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
  'Service',
  'DaemonSet',
  'Deployment',
  'StatefulSet',
  'Job',
  'CronJob',
];

/** True for kinds applied in the first stage (before anything that may depend on them). */
export function isStageOneKind(kind: string): boolean {
  return kind === 'CustomResourceDefinition' || kind === 'Namespace';
}

/**
 * Renders every YAML document under `dir/path`: files sorted by path, multi-document files split,
 * empty documents dropped, `List` kinds expanded, then ordered CRDs and Namespaces first.
 * @throws ConfigError naming the file, document index and line of the first broken document.
 */
export async function renderDirectory(dir: string, path: string): Promise<RenderedObject[]> {
  const root = join(dir, path);
  if (relative(dir, root).startsWith('..'))
    throw new ConfigError(`spec.path "${path}" leaves the repository; use a folder inside it`);
  let files: string[];
  try {
    files = (await listYaml(root)).sort();
  } catch (err) {
    throw new ConfigError(
      `spec.path "${path}" cannot be read in the repository: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}; fix spec.path`,
      { cause: err },
    );
  }
  const out: RenderedObject[] = [];
  for (const abs of files) {
    const file = relative(dir, abs);
    out.push(...renderYaml(await readFile(abs, 'utf8'), file));
  }
  const rank = (k: string) => {
    const i = KIND_ORDER.indexOf(k);
    return i < 0 ? KIND_ORDER.length : i;
  };
  // Array.prototype.sort is stable: within a kind, file order is kept.
  return out.sort((a, b) => rank(a.object.kind) - rank(b.object.kind));
}

/**
 * Parses one YAML file (YAML 1.1, as kubectl reads it) into objects.
 * @throws ConfigError naming `file`, the document index and line.
 */
export function renderYaml(text: string, file: string): RenderedObject[] {
  const out: RenderedObject[] = [];
  const docs = parseAllDocuments(text, { version: '1.1', prettyErrors: true });
  const list = Array.isArray(docs) ? docs : [docs];
  list.forEach((doc, i) => {
    const err = doc.errors[0];
    if (err) {
      const line = err.linePos?.[0]?.line;
      throw new ConfigError(
        `${file}: document ${i}${line ? ` (line ${line})` : ''}: invalid YAML: ${err.message.split('\n')[0]}; fix the file in Git`,
      );
    }
    const value = doc.toJS({ maxAliasCount: 100 }) as unknown;
    if (value === null || value === undefined) return;
    const objs =
      isObject(value) && value.kind === 'List' && Array.isArray(value.items) ? (value.items as unknown[]) : [value];
    for (const v of objs) out.push({ object: checkHeader(v, file, i), source: { file, doc: i } });
  });
  return out;
}

function checkHeader(v: unknown, file: string, doc: number): RestObject {
  const where = `${file}: document ${doc}`;
  if (!isObject(v))
    throw new ConfigError(
      `${where}: expected a Kubernetes object (a mapping), found ${Array.isArray(v) ? 'a sequence' : typeof v}`,
    );
  if (typeof v.apiVersion !== 'string' || !v.apiVersion) throw new ConfigError(`${where}: apiVersion is missing`);
  if (typeof v.kind !== 'string' || !v.kind) throw new ConfigError(`${where}: kind is missing`);
  const md = v.metadata;
  if (!isObject(md) || typeof md.name !== 'string' || !md.name)
    throw new ConfigError(`${where}: ${v.kind} has no metadata.name`);
  if (md.generateName !== undefined)
    throw new ConfigError(
      `${where}: ${v.kind} "${md.name}" uses generateName, which cannot be applied idempotently; set metadata.name only`,
    );
  return v as RestObject;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

async function listYaml(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    // Hidden entries (.git, .github) are never manifests.
    if (e.name.startsWith('.')) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await listYaml(p)));
    else if (e.isFile() && /\.ya?ml$/i.test(e.name)) out.push(p);
  }
  return out;
}

/** The inventory id of an object: `apiVersion/kind/namespace/name` (namespace empty when cluster-scoped). */
export function objectId(o: {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string | undefined };
}): string {
  return `${o.apiVersion}/${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

/** Parses an inventory id back into its parts. */
export function parseObjectId(id: string): {
  apiVersion: string;
  kind: string;
  namespace: string | undefined;
  name: string;
} {
  const parts = id.split('/');
  const name = parts.pop() ?? '';
  const ns = parts.pop() ?? '';
  const kind = parts.pop() ?? '';
  return { apiVersion: parts.join('/'), kind, namespace: ns || undefined, name };
}

/** A human name for messages: `Deployment demo/web` or `Namespace demo`. */
export function describeObject(o: {
  kind: string;
  metadata: { name: string; namespace?: string | undefined };
}): string {
  return `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
}
