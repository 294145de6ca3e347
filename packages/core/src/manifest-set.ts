import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ConfigError } from '@baton/errors';
import { describeObject, INSTALL_KINDS, type KindInfo, type KubeObject, kindsFromCrds } from '@baton/kube/plan';
import { LineCounter, parse, parseAllDocuments } from 'yaml';
import { canonicalJson } from './canonical-json.js';
import type { HandoffPlan } from './handoff-plan.js';
import { findProfile, type LoadedProfile, loadProfile, pushOnlyReason, type SecretRef } from './profile.js';

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
  /**
   * Objects the push creates that the controller does not take over, as Kind/namespace/name: plan-declared Secrets
   * (never in Git) and what the profile lists as push-only (e.g. CRDs and RBAC a scoped Flux cannot apply).
   */
  readonly pushOnly: readonly string[];
  /** The profile whose takeover rules are checked too, when the plan names one or the manifests carry one. */
  readonly profile?: LoadedProfile;
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

/** The profile must describe the plan's controller: same name, namespace and field manager. */
function checkProfile({ file, profile }: LoadedProfile, plan: HandoffPlan, violations: Violations): void {
  if (profile.name !== plan.push.profile)
    violations.add(
      `${file} is profile ${profile.name}, but the plan's push.profile is ${plan.push.profile}; set push.profile: ${profile.name} or point takeover.profile at the ${plan.push.profile} profile`,
    );
  if (profile.namespace !== plan.controller.namespace)
    violations.add(
      `${file} runs the controller in namespace ${profile.namespace}, but the plan's controller.namespace is ${plan.controller.namespace}; make them equal`,
    );
  if (profile.fieldManagers.length > 0 && !profile.fieldManagers.includes(plan.controller.fieldManager))
    violations.add(
      `${file} says ${profile.name} applies as ${profile.fieldManagers.join(', ')}, but the plan's controller.fieldManager is ${plan.controller.fieldManager}; the takeover would never be seen: set controller.fieldManager: ${profile.fieldManagers[0]}`,
    );
}

/** The violations of one manifest set, each naming the file, document and line. */
class Violations {
  readonly problems: string[] = [];

  /** A problem of the set as a whole (something missing). */
  add(problem: string): void {
    this.problems.push(problem);
  }

  /** A problem of one object: `rule` follows the object's kind and name. */
  refuse(m: ManifestObject, rule: string): void {
    this.problems.push(`${where(m)}: ${describeSafe(m.object)} ${rule}`);
  }
}

function where(m: ManifestObject): string {
  return `${m.file}#${m.doc} (line ${m.line})`;
}

/** What the set declares, by kind and name. */
class DeclaredObjects {
  constructor(private readonly objects: readonly ManifestObject[]) {}

  has(kind: string, name: string): boolean {
    return this.objects.some((x) => x.object.kind === kind && x.object.metadata.name === name);
  }
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

/** No object twice; the only Namespace is the controller's; the only Secrets are the plan's; bindings stay inside. */
function checkInstallRules(
  objects: readonly ManifestObject[],
  set: DeclaredObjects,
  plan: HandoffPlan,
  violations: Violations,
): void {
  const ns = plan.controller.namespace;
  const allowedSecrets = [plan.pull.credential.secretName, ...plan.push.secrets.map((x) => x.name)];
  const keys = new Set<string>();
  for (const m of objects) {
    const o = m.object;
    const id = describeObject(o);
    if (keys.has(id)) violations.refuse(m, 'is declared twice; keep one');
    keys.add(id);
    if (o.kind === 'Namespace' && o.metadata.name !== ns) {
      violations.refuse(m, `is refused: the only Namespace an install creates is the controller namespace ${ns}`);
    }
    if (o.kind === 'Secret' && !allowedSecrets.includes(o.metadata.name)) {
      violations.refuse(
        m,
        `is refused: the only Secrets an install carries are the pull credential and push.secrets (${allowedSecrets.join(', ')})`,
      );
    }
    if (o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding')
      checkBinding(m, set, ns, plan.controller.privilege, violations);
    if (o.kind === 'Service') checkService(m, violations);
  }
}

/**
 * A binding binds only ServiceAccounts of the set to roles of the set, never an existing role; cluster-admin only
 * with the plan's `controller.privilege: cluster-admin`, as a ClusterRoleBinding.
 */
function checkBinding(
  m: ManifestObject,
  set: DeclaredObjects,
  ns: string,
  privilege: HandoffPlan['controller']['privilege'],
  violations: Violations,
): void {
  const b = m.object as unknown as {
    roleRef?: { kind?: string; name?: string };
    subjects?: { kind?: string; name?: string; namespace?: string }[];
  };
  const ref = b.roleRef;
  const isChosenClusterAdmin =
    privilege === 'cluster-admin' && m.object.kind === 'ClusterRoleBinding' && ref?.name === 'cluster-admin';
  if (!ref?.kind || !ref.name) violations.refuse(m, 'has no roleRef');
  else if (ref.kind === 'ClusterRole' && !set.has('ClusterRole', ref.name) && !isChosenClusterAdmin) {
    violations.refuse(
      m,
      ref.name === 'cluster-admin'
        ? 'binds ClusterRole cluster-admin, which the plan does not choose; remove the binding (the default), or set controller.privilege: cluster-admin in the plan to grant it deliberately (the audit event records the choice)'
        : `binds ClusterRole ${ref.name}, which is not part of the install; bind a ClusterRole declared in the manifest set`,
    );
  } else if (ref.kind === 'Role' && !set.has('Role', ref.name)) {
    violations.refuse(
      m,
      `binds Role ${ref.name}, which is not part of the install; bind a Role declared in the manifest set`,
    );
  }
  for (const s of b.subjects ?? []) {
    const isOwnSa =
      s.kind === 'ServiceAccount' && (s.namespace ?? ns) === ns && set.has('ServiceAccount', s.name ?? '');
    if (!isOwnSa) {
      violations.refuse(
        m,
        `binds ${ref?.kind ?? 'a role'} ${ref?.name ?? ''} to ${s.kind} ${s.namespace ? `${s.namespace}/` : ''}${s.name}, which is not the controller's; remove it or bind the controller's own ServiceAccount`,
      );
    }
  }
  if ((b.subjects ?? []).length === 0) violations.refuse(m, 'has no subjects');
}

/** A pushed Service stays inside the cluster: ClusterIP, no external IPs (they can intercept other traffic). */
function checkService(m: ManifestObject, violations: Violations): void {
  const spec = (m.object as { spec?: { type?: string; externalIPs?: unknown[] } }).spec;
  if ((spec?.type ?? 'ClusterIP') !== 'ClusterIP')
    violations.refuse(
      m,
      `is refused: type ${spec?.type} exposes the cluster outside; an install pushes ClusterIP Services only (let the controller apply others from Git)`,
    );
  if ((spec?.externalIPs ?? []).length > 0)
    violations.refuse(m, 'is refused: externalIPs can capture traffic for other addresses; remove spec.externalIPs');
}

/** The controller's ServiceAccount and the pull credential are part of every install. */
function checkRequiredObjects(set: DeclaredObjects, plan: HandoffPlan, violations: Violations): void {
  const ns = plan.controller.namespace;
  if (!set.has('ServiceAccount', plan.controller.serviceAccount)) {
    violations.add(
      `the manifest set has no ServiceAccount ${ns}/${plan.controller.serviceAccount} (controller.serviceAccount); add it`,
    );
  }
  if (!set.has('Secret', plan.pull.credential.secretName)) {
    violations.add(
      `the manifest set has no Secret ${ns}/${plan.pull.credential.secretName} (pull.credential.secretName); add the read-only pull credential`,
    );
  }
}

/** The pod template fields that name a Secret the pod cannot start without (unless `optional: true`). */
interface PodTemplateSecrets {
  readonly containers?: readonly SecretReadingContainer[];
  readonly initContainers?: readonly SecretReadingContainer[];
  readonly volumes?: readonly {
    name?: string;
    secret?: { secretName?: string; optional?: boolean };
    projected?: { sources?: readonly { secret?: { name?: string; optional?: boolean } }[] };
  }[];
}

interface SecretReadingContainer {
  readonly name?: string;
  readonly env?: readonly {
    name?: string;
    valueFrom?: { secretKeyRef?: { name?: string; key?: string; optional?: boolean } };
  }[];
  readonly envFrom?: readonly { secretRef?: { name?: string; optional?: boolean } }[];
}

/**
 * Every Secret a pushed workload needs to start (env `secretKeyRef`, `envFrom`, secret and projected volumes, unless
 * optional) is one the push creates, with the key read: otherwise the pod waits in CreateContainerConfigError on a
 * real node and the takeover only times out. Checked before anything is created.
 */
function checkSecretReferences(
  objects: readonly ManifestObject[],
  violations: Violations,
  refs: readonly SecretRef[],
): void {
  const secrets = new Map(
    objects.filter((m) => m.object.kind === 'Secret').map((m) => [m.object.metadata.name, secretKeys(m.object)]),
  );
  const fix =
    'declare it in the plan (push.secrets: a file with its keys; with Pulumi, the pushSecrets input or stack config), or mark the reference optional: true';
  for (const m of objects) {
    for (const { name, via, key, isController } of requiredSecrets(m.object, refs)) {
      const keys = secrets.get(name);
      const stalls = isController ? 'so the controller would stall on it' : 'so its pod would never start';
      if (!keys)
        violations.refuse(m, `needs Secret ${name} (${via}), which the push does not create, ${stalls}; ${fix}`);
      else if (key !== undefined && !(key in keys))
        violations.refuse(
          m,
          `needs key ${key} of Secret ${name} (${via}), which the push creates without it (keys: ${Object.keys(keys).join(', ') || 'none'}); add ${key} to the Secret's file`,
        );
    }
  }
}

/**
 * The Secrets the set's workloads cannot start without (non-optional references), each with the keys its env reads
 * (none for a Secret read whole, through `envFrom` or a volume), and those the profile's `secretRefs` name (a
 * GitSync's webhook Secret): what a plan must push. `baton init` writes them.
 */
export function secretsReadByWorkloads(
  objects: readonly KubeObject[],
  refs: readonly SecretRef[] = [],
): { name: string; keys: string[] }[] {
  const out = new Map<string, Set<string>>();
  for (const o of objects) {
    for (const { name, key } of requiredSecrets(o, refs)) {
      const keys = out.get(name) ?? new Set<string>();
      if (key) keys.add(key);
      out.set(name, keys);
    }
  }
  return [...out].map(([name, keys]) => ({ name, keys: [...keys].sort() }));
}

/**
 * The Secrets (and keys) an object needs: a workload's pods their non-optional references; an object of a kind the
 * profile's `secretRefs` name, the Secret in that field (`isController`: the controller reads it, not a pod).
 */
function requiredSecrets(o: KubeObject, refs: readonly SecretRef[] = []): SecretNeed[] {
  return [...controllerSecrets(o, refs), ...podSecrets(o)];
}

interface SecretNeed {
  readonly name: string;
  readonly via: string;
  readonly key?: string;
  readonly isController?: boolean;
}

/** The Secrets the profile's `secretRefs` name in `o`'s fields (non-optional ones). */
function controllerSecrets(o: KubeObject, refs: readonly SecretRef[]): SecretNeed[] {
  const out: SecretNeed[] = [];
  for (const ref of refs.filter((r) => r.kind === o.kind && !r.optional)) {
    const name = ref.field.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], o);
    if (typeof name !== 'string' || !name) continue;
    if (ref.keys.length === 0) out.push({ name, via: ref.field, isController: true });
    for (const key of ref.keys) out.push({ name, via: ref.field, key, isController: true });
  }
  return out;
}

/** The Secrets (and keys) a workload's pods cannot start without: their non-optional references. */
function podSecrets(o: KubeObject): SecretNeed[] {
  const out: SecretNeed[] = [];
  if (o.kind !== 'Deployment' && o.kind !== 'StatefulSet') return out;
  const pod = (o as { spec?: { template?: { spec?: PodTemplateSecrets } } }).spec?.template?.spec ?? {};
  const need = (ref: { optional?: boolean } | undefined, name: string | undefined, via: string, key?: string) => {
    if (ref && !ref.optional && name) out.push({ name, via, ...(key === undefined ? {} : { key }) });
  };
  for (const c of [...(pod.containers ?? []), ...(pod.initContainers ?? [])]) {
    for (const e of c.env ?? []) {
      const ref = e.valueFrom?.secretKeyRef;
      need(ref, ref?.name, `env ${e.name} of container ${c.name}`, ref?.key ?? '');
    }
    for (const e of c.envFrom ?? []) need(e.secretRef, e.secretRef?.name, `envFrom of container ${c.name}`);
  }
  for (const v of pod.volumes ?? []) {
    need(v.secret, v.secret?.secretName, `volume ${v.name}`);
    for (const src of v.projected?.sources ?? []) need(src.secret, src.secret?.name, `projected volume ${v.name}`);
  }
  return out;
}

/**
 * The controller workload's image (its Deployment or StatefulSet), which must be pinned by digest so the audit record
 * names what ran; or, where the profile says upstream publishes no digest (`imagePinnedByTag`), by an exact release
 * tag (`:vX.Y.Z`), recorded with an empty digest.
 */
function controllerImageOf(
  objects: readonly ManifestObject[],
  plan: HandoffPlan,
  violations: Violations,
  profile?: LoadedProfile,
): ManifestSet['controllerImage'] {
  const none = { image: '', digest: '' };
  const workload = objects.find(
    (m) =>
      (m.object.kind === 'Deployment' || m.object.kind === 'StatefulSet') &&
      m.object.metadata.name === plan.controller.name,
  );
  if (!workload) {
    violations.add(
      `the manifest set has no Deployment or StatefulSet ${plan.controller.namespace}/${plan.controller.name} (controller.name); add the controller`,
    );
    return none;
  }
  const image =
    ((workload.object as { spec?: { template?: { spec?: { containers?: { image?: string }[] } } } }).spec?.template
      ?.spec?.containers ?? [])[0]?.image ?? '';
  const at = image.indexOf('@sha256:');
  if (at >= 0 && /^sha256:[0-9a-f]{64}$/.test(image.slice(at + 1)))
    return { image: image.slice(0, at), digest: image.slice(at + 1) };
  if (profile?.profile.imagePinnedByTag && /^[^@\s]+:v\d+\.\d+\.\d+$/.test(image)) return { image, digest: '' };
  violations.refuse(
    workload,
    `runs image "${image}", which is not pinned by digest; use <image>@sha256:<64 hex digits> so the audit record names what ran${profile?.profile.imagePinnedByTag ? ' (or, as the profile allows, an exact release tag <image>:vX.Y.Z)' : ''}`,
  );
  return none;
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
            labels: plan.pull.credential.labels,
            profileData: plan.pull.credential.profileData,
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
      metadata: { name: x.name, ...('labels' in x && x.labels ? { labels: x.labels } : {}) },
      type: 'Opaque',
      // The profile's keys first: the file's own win.
      stringData: { ...('profileData' in x ? x.profileData : {}), ...data },
    };
    return { object, file: `<plan ${x.field}>`, doc: 0, line: 1 };
  });
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

function describeSafe(o: Partial<KubeObject>): string {
  const name = o.metadata?.name ?? '?';
  return o.metadata?.namespace ? `${o.kind} "${o.metadata.namespace}/${name}"` : `${o.kind} "${name}"`;
}
