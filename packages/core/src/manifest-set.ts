import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ConfigError } from '@baton/errors';
import { describeObject, INSTALL_KINDS, type KindInfo, type KubeObject, kindsFromCrds } from '@baton/kube';
import { LineCounter, parse, parseAllDocuments } from 'yaml';
import type { HandoffPlan } from './handoff-plan.js';

/** One object of the manifest set, with where it came from. */
export interface ManifestObject {
  readonly object: KubeObject;
  /** File relative to the manifest directory. */
  readonly file: string;
  /** Document index in the file (0-based). */
  readonly doc: number;
  /** 1-based line where the document starts. */
  readonly line: number;
}

/** A validated manifest set: exactly what the push will apply, in apply order. */
export interface ManifestSet {
  readonly dir: string;
  readonly objects: readonly ManifestObject[];
  /** `sha256:<hex>` over the canonical JSON of the objects in apply order. */
  readonly digest: string;
  /** Objects the push creates that never live in Git (plan-declared Secrets), as Kind/namespace/name. */
  readonly pushOnly: readonly string[];
  /** The controller's image reference without digest, and its digest. */
  readonly controllerImage: { readonly image: string; readonly digest: string };
}

/**
 * Reads every `*.yaml`/`*.yml`/`*.json` file of `dir` (sorted, not recursive) as YAML 1.1, dropping empty
 * documents.
 * @throws {ConfigError} naming the file and line of a YAML error.
 */
export function readManifestDir(dir: string): ManifestObject[] {
  let files: string[];
  try {
    files = readdirSync(dir)
      .filter((f) => /\.(ya?ml|json)$/.test(f))
      .sort();
  } catch (err) {
    throw new ConfigError(
      `cannot read manifest directory ${dir}: ${(err as Error).message}; check push.manifests in the plan`,
      { cause: err },
    );
  }
  const out: ManifestObject[] = [];
  for (const f of files) {
    const path = join(dir, f);
    const lc = new LineCounter();
    const docs = parseAllDocuments(readFileSync(path, 'utf8'), { version: '1.1', lineCounter: lc });
    if (!Array.isArray(docs)) throw new ConfigError(`${path}: not a YAML stream`);
    docs.forEach((d, i) => {
      const line = lc.linePos(d.range[0]).line;
      if (d.errors.length > 0)
        throw new ConfigError(`${path}:${d.errors[0]?.linePos?.[0]?.line ?? line}: ${d.errors[0]?.message}`);
      const js = d.toJS() as unknown;
      if (js === null || js === undefined) return;
      out.push({ object: js as KubeObject, file: relative(dir, path) || f, doc: i, line });
    });
  }
  return out;
}

/** Kinds in apply order: what others depend on first, workloads last. */
export const APPLY_ORDER: readonly string[] = [
  'Namespace',
  'CustomResourceDefinition',
  'ServiceAccount',
  'ClusterRole',
  'Role',
  'ClusterRoleBinding',
  'RoleBinding',
  'Secret',
  'ConfigMap',
  'Deployment',
];

/**
 * Checks a manifest set against the plan and the install rules, and returns it in apply order. Every violation is
 * reported at once, each naming the file, the object and the rule; nothing is created by a refused set.
 * Rules: only install kinds; everything namespaced lives in the controller namespace (missing namespaces default
 * to it); the only Namespace is the controller's; bindings bind only ServiceAccounts of the set to roles of the
 * set (never cluster-admin or another existing role); the only Secrets are the pull credential and push.secrets; kinds a CRD of the set defines are allowed; the
 * controller's ServiceAccount and Deployment are present and the Deployment pins its image by digest.
 * @throws {ConfigError} listing every violation.
 */
export function validateManifestSet(
  fromDir: readonly ManifestObject[],
  plan: HandoffPlan,
  dir = plan.push.manifests,
): ManifestSet {
  const generated = planSecrets(plan);
  const raw = [...fromDir, ...generated];
  const kinds: Readonly<Record<string, KindInfo>> = {
    ...kindsFromCrds(raw.map((m) => m.object).filter((o) => o?.kind === 'CustomResourceDefinition')),
    ...INSTALL_KINDS,
  };
  const allowedSecrets = [plan.pull.credential.secretName, ...plan.push.secrets.map((x) => x.name)];
  const ns = plan.controller.namespace;
  const problems: string[] = [];
  const where = (m: ManifestObject) => `${m.file}#${m.doc} (line ${m.line})`;
  const refuse = (m: ManifestObject, rule: string) => problems.push(`${where(m)}: ${describeSafe(m.object)} ${rule}`);
  const objects: ManifestObject[] = [];
  for (const m of raw) {
    const o = m.object as Partial<KubeObject>;
    if (
      typeof o !== 'object' ||
      typeof o.kind !== 'string' ||
      typeof o.apiVersion !== 'string' ||
      typeof o.metadata?.name !== 'string'
    ) {
      problems.push(`${where(m)}: not a Kubernetes object (apiVersion, kind and metadata.name are required)`);
      continue;
    }
    const info = kinds[o.kind];
    if (!info) {
      refuse(
        m,
        `is refused: kind ${o.kind} is not part of a controller install (allowed: ${Object.keys(kinds).join(', ')}); remove it and let the controller apply it from Git`,
      );
      continue;
    }
    const expectedApiVersion = info.group ? `${info.group}/${info.version}` : info.version;
    if (o.apiVersion !== expectedApiVersion) {
      refuse(m, `has apiVersion ${o.apiVersion}; use ${expectedApiVersion}`);
      continue;
    }
    let obj = o as KubeObject;
    if (info.isNamespaced) {
      if (obj.metadata.namespace === undefined) obj = { ...obj, metadata: { ...obj.metadata, namespace: ns } };
      if (obj.metadata.namespace !== ns) {
        refuse(
          m,
          `is refused: it is in namespace ${obj.metadata.namespace}, but an install only writes to the controller namespace ${ns}; move it to ${ns} or let the controller apply it from Git`,
        );
        continue;
      }
    } else if (obj.metadata.namespace !== undefined) {
      const { namespace: _drop, ...rest } = obj.metadata;
      obj = { ...obj, metadata: rest as KubeObject['metadata'] };
    }
    objects.push({ ...m, object: obj });
  }
  const declared = (kind: string, name: string) =>
    objects.some((x) => x.object.kind === kind && x.object.metadata.name === name);
  const keys = new Set<string>();
  for (const m of objects) {
    const o = m.object;
    const id = describeObject(o);
    if (keys.has(id)) refuse(m, 'is declared twice; keep one');
    keys.add(id);
    if (o.kind === 'Namespace' && o.metadata.name !== ns) {
      refuse(m, `is refused: the only Namespace an install creates is the controller namespace ${ns}`);
    }
    if (o.kind === 'Secret' && !allowedSecrets.includes(o.metadata.name)) {
      refuse(
        m,
        `is refused: the only Secrets an install carries are the pull credential and push.secrets (${allowedSecrets.join(', ')})`,
      );
    }
    if (o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding') {
      const b = o as unknown as {
        roleRef?: { kind?: string; name?: string };
        subjects?: { kind?: string; name?: string; namespace?: string }[];
      };
      const ref = b.roleRef;
      if (!ref?.kind || !ref.name) refuse(m, 'has no roleRef');
      else if (ref.kind === 'ClusterRole' && !declared('ClusterRole', ref.name)) {
        refuse(
          m,
          `binds ClusterRole ${ref.name}, which is not part of the install${ref.name === 'cluster-admin' ? ' (cluster-admin is never granted by a push)' : ''}; bind a ClusterRole declared in the manifest set`,
        );
      } else if (ref.kind === 'Role' && !declared('Role', ref.name)) {
        refuse(m, `binds Role ${ref.name}, which is not part of the install; bind a Role declared in the manifest set`);
      }
      for (const s of b.subjects ?? []) {
        const isOwnSa =
          s.kind === 'ServiceAccount' && (s.namespace ?? ns) === ns && declared('ServiceAccount', s.name ?? '');
        if (!isOwnSa) {
          refuse(
            m,
            `binds ${ref?.kind ?? 'a role'} ${ref?.name ?? ''} to ${s.kind} ${s.namespace ? `${s.namespace}/` : ''}${s.name}, which is not the controller's; remove it or bind the controller's own ServiceAccount`,
          );
        }
      }
      if ((b.subjects ?? []).length === 0) refuse(m, 'has no subjects');
    }
  }
  if (!declared('ServiceAccount', plan.controller.serviceAccount)) {
    problems.push(
      `the manifest set has no ServiceAccount ${ns}/${plan.controller.serviceAccount} (controller.serviceAccount); add it`,
    );
  }
  if (!declared('Secret', plan.pull.credential.secretName)) {
    problems.push(
      `the manifest set has no Secret ${ns}/${plan.pull.credential.secretName} (pull.credential.secretName); add the read-only pull credential`,
    );
  }
  let controllerImage = { image: '', digest: '' };
  const dep = objects.find((m) => m.object.kind === 'Deployment' && m.object.metadata.name === plan.controller.name);
  if (!dep) {
    problems.push(
      `the manifest set has no Deployment ${ns}/${plan.controller.name} (controller.name); add the controller`,
    );
  } else {
    const image =
      ((dep.object as { spec?: { template?: { spec?: { containers?: { image?: string }[] } } } }).spec?.template?.spec
        ?.containers ?? [])[0]?.image ?? '';
    const at = image.indexOf('@sha256:');
    if (at < 0 || !/^sha256:[0-9a-f]{64}$/.test(image.slice(at + 1))) {
      refuse(
        dep,
        `runs image "${image}", which is not pinned by digest; use <image>@sha256:<64 hex digits> so the audit record names what ran`,
      );
    } else controllerImage = { image: image.slice(0, at), digest: image.slice(at + 1) };
  }
  if (problems.length > 0) {
    throw new ConfigError(`manifest set ${dir} is refused, nothing was created:\n  - ${problems.join('\n  - ')}`, {
      details: { dir, problems },
    });
  }
  const ordered = [...objects].sort((a, b) => applyRank(a.object.kind) - applyRank(b.object.kind));
  // Secret values never enter the digest (a hash of a short password can be guessed offline): keys only.
  const digestable = ordered.map((m) =>
    m.object.kind === 'Secret' ? { ...m.object, data: secretKeys(m.object), stringData: undefined } : m.object,
  );
  const digest = `sha256:${createHash('sha256').update(JSON.stringify(digestable)).digest('hex')}`;
  const pushOnly = generated.map((m) => `Secret/${ns}/${m.object.metadata.name}`);
  return { dir, objects: ordered, digest, controllerImage, pushOnly };
}

// Custom kinds (the controller's source object) come after the built-in ones: their CRD must exist first.
function applyRank(kind: string): number {
  const i = APPLY_ORDER.indexOf(kind);
  return i < 0 ? APPLY_ORDER.length : i;
}

function secretKeys(o: KubeObject): Record<string, string> {
  const keys = [...Object.keys((o.data as object) ?? {}), ...Object.keys((o.stringData as object) ?? {})];
  return Object.fromEntries(keys.sort().map((k) => [k, '']));
}

/**
 * The Secrets the plan declares from files (the pull credential's `fromFile` and `push.secrets`): created by the
 * push in the controller namespace, never stored in Git.
 * @throws {ConfigError} naming the file (never its content) when it is unreadable or not a map of strings.
 */
export function planSecrets(plan: HandoffPlan): ManifestObject[] {
  const specs = [
    ...(plan.pull.credential.fromFile
      ? [
          {
            name: plan.pull.credential.secretName,
            fromFile: plan.pull.credential.fromFile,
            field: 'pull.credential.fromFile',
          },
        ]
      : []),
    ...plan.push.secrets.map((x, i) => ({ ...x, field: `push.secrets[${i}].fromFile` })),
  ];
  return specs.map((x) => {
    let data: unknown;
    try {
      data = parse(readFileSync(x.fromFile, 'utf8'), { version: '1.1' });
    } catch (err) {
      throw new ConfigError(
        `${x.field}: cannot read ${x.fromFile} (${(err as NodeJS.ErrnoException).code ?? 'not YAML'}); give a YAML map of key: value`,
        {
          cause: err,
        },
      );
    }
    if (data === null || typeof data !== 'object' || Object.values(data).some((v) => typeof v !== 'string')) {
      throw new ConfigError(`${x.field}: ${x.fromFile} must be a YAML map of key: string value`);
    }
    const object: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: x.name },
      type: 'Opaque',
      stringData: data,
    };
    return { object, file: `<plan ${x.field}>`, doc: 0, line: 1 };
  });
}

/** Reads and validates the plan's manifest directory. @throws {ConfigError} as {@link validateManifestSet}. */
export function loadManifestSet(plan: HandoffPlan): ManifestSet {
  return validateManifestSet(readManifestDir(plan.push.manifests), plan);
}

function describeSafe(o: Partial<KubeObject>): string {
  const name = o.metadata?.name ?? '?';
  return o.metadata?.namespace ? `${o.kind} "${o.metadata.namespace}/${name}"` : `${o.kind} "${name}"`;
}
