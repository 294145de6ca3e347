import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ConfigError } from '@baton/errors';
import { describeObject, INSTALL_KINDS, type KindInfo, type KubeObject, kindsFromCrds } from '@baton/kube/plan';
import { LineCounter, parseAllDocuments } from 'yaml';
import { canonicalJson } from './canonical-json.js';
import type { HandoffPlan } from './handoff-plan.js';
import { checkInstallRules, checkProfile, checkRequiredObjects, controllerImageOf } from './install-rules.js';
import type { ManifestObject, ManifestSet } from './manifest.js';
import { checkSecretReferences, planSecrets, secretKeys } from './manifest-secrets.js';
import { DeclaredObjects, Violations, where } from './manifest-violations.js';
import { findProfile, type LoadedProfile, loadProfile, pushOnlyReason } from './profile.js';

export type { ManifestObject, ManifestSet } from './manifest.js';

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
  'Service',
  'Deployment',
  'StatefulSet',
];

/**
 * Checks a manifest set against the plan and the install rules, and returns it in apply order. Every violation is
 * reported at once, each naming the file, the object and the rule; nothing is created by a refused set.
 * Rules: only install kinds; Services are ClusterIP without external IPs; everything namespaced lives in the controller namespace (missing namespaces default
 * to it); the only Namespace is the controller's; bindings bind only ServiceAccounts of the set to roles of the
 * set (never cluster-admin or another existing role); the only Secrets are the pull credential and push.secrets; kinds a CRD of the set defines are allowed; the
 * controller's ServiceAccount and Deployment are present and the Deployment pins its image by digest.
 * @throws {ConfigError} listing every violation.
 */
export function validateManifestSet(
  fromDir: readonly ManifestObject[],
  plan: HandoffPlan,
  dir = plan.push.manifests,
  profile?: LoadedProfile,
): ManifestSet {
  const generated = planSecrets(plan);
  const raw = [...fromDir, ...generated];
  const kinds: Readonly<Record<string, KindInfo>> = {
    ...kindsFromCrds(raw.map((m) => m.object).filter((o) => o?.kind === 'CustomResourceDefinition')),
    ...INSTALL_KINDS,
  };
  const ns = plan.controller.namespace;
  const violations = new Violations();
  const objects = raw.flatMap((m) => {
    const normalized = normalizeObject(m, kinds, ns, violations);
    return normalized ? [normalized] : [];
  });
  const set = new DeclaredObjects(objects);
  checkInstallRules(objects, set, plan, violations);
  checkRequiredObjects(set, plan, violations);
  checkSecretReferences(objects, violations, profile?.profile.secretRefs ?? []);
  const controllerImage = controllerImageOf(objects, plan, violations, profile);
  if (profile) checkProfile(profile, plan, violations);
  if (violations.problems.length > 0) {
    const { problems } = violations;
    throw new ConfigError(`manifest set ${dir} is refused, nothing was created:\n  - ${problems.join('\n  - ')}`, {
      details: { dir, problems },
    });
  }
  const ordered = [...objects].sort((a, b) => applyRank(a.object.kind) - applyRank(b.object.kind));
  const pushOnly = [
    ...generated.map((m) => `Secret/${ns}/${m.object.metadata.name}`),
    ...(profile
      ? ordered
          .filter((m) => pushOnlyReason(profile.profile, m.object.kind, m.object.metadata.name) !== undefined)
          .map((m) => describeObject(m.object))
      : []),
  ];
  return {
    dir,
    objects: ordered,
    digest: setDigest(ordered),
    controllerImage,
    pushOnly: [...new Set(pushOnly)],
    ...(profile ? { profile } : {}),
  };
}

/**
 * The object as the push will apply it: an install kind at its served apiVersion, namespaced objects in the
 * controller namespace (a missing namespace defaults to it), cluster-scoped ones without a namespace. Undefined (and
 * a violation recorded) when it is none of that.
 */
function normalizeObject(
  m: ManifestObject,
  kinds: Readonly<Record<string, KindInfo>>,
  ns: string,
  violations: Violations,
): ManifestObject | undefined {
  const o = m.object as Partial<KubeObject>;
  if (
    typeof o !== 'object' ||
    typeof o.kind !== 'string' ||
    typeof o.apiVersion !== 'string' ||
    typeof o.metadata?.name !== 'string'
  ) {
    violations.add(`${where(m)}: not a Kubernetes object (apiVersion, kind and metadata.name are required)`);
    return undefined;
  }
  const info = kinds[o.kind];
  if (!info) {
    violations.refuse(
      m,
      `is refused: kind ${o.kind} is not part of a controller install (allowed: ${Object.keys(kinds).join(', ')}); remove it and let the controller apply it from Git`,
    );
    return undefined;
  }
  const expectedApiVersion = info.group ? `${info.group}/${info.version}` : info.version;
  if (o.apiVersion !== expectedApiVersion) {
    violations.refuse(m, `has apiVersion ${o.apiVersion}; use ${expectedApiVersion}`);
    return undefined;
  }
  const obj = o as KubeObject;
  if (!info.isNamespaced) {
    if (obj.metadata.namespace === undefined) return m;
    const { namespace: _drop, ...rest } = obj.metadata;
    return { ...m, object: { ...obj, metadata: rest as KubeObject['metadata'] } };
  }
  if (obj.metadata.namespace === undefined)
    return { ...m, object: { ...obj, metadata: { ...obj.metadata, namespace: ns } } };
  if (obj.metadata.namespace !== ns) {
    violations.refuse(
      m,
      `is refused: it is in namespace ${obj.metadata.namespace}, but an install only writes to the controller namespace ${ns}; move it to ${ns} or let the controller apply it from Git`,
    );
    return undefined;
  }
  return m;
}

/**
 * `sha256:` over the RFC 8785 canonical JSON (JCS) of the objects in apply order: the same objects give the same
 * digest whatever the key order of their YAML. (Before issue 18 it hashed JSON.stringify in YAML key order; events
 * recorded then keep their digest as a signed value: verification checks signatures and the log, never recomputes it.)
 */
export function setDigest(ordered: readonly ManifestObject[]): string {
  // Secret values never enter the digest (a hash of a short password can be guessed offline): keys only.
  const digestable = ordered.map((m) =>
    m.object.kind === 'Secret' ? { ...m.object, data: secretKeys(m.object), stringData: undefined } : m.object,
  );
  return `sha256:${createHash('sha256').update(canonicalJson(digestable)).digest('hex')}`;
}

// Custom kinds (the controller's source object) come after the built-in ones: their CRD must exist first.
function applyRank(kind: string): number {
  const i = APPLY_ORDER.indexOf(kind);
  return i < 0 ? APPLY_ORDER.length : i;
}

/**
 * Reads and validates the plan's manifest directory, with the profile the plan names (`takeover.profile`) or the
 * directory carries (`rules/profile.yaml`).
 * @throws {ConfigError} as {@link validateManifestSet}, or naming the profile file and field.
 */
export function loadManifestSet(plan: HandoffPlan): ManifestSet {
  const profile = plan.takeover.profile ? loadProfile(plan.takeover.profile) : findProfile(plan.push.manifests);
  return validateManifestSet(readManifestDir(plan.push.manifests), plan, plan.push.manifests, profile);
}
