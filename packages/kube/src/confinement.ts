import { ConfinementError } from '@baton/errors';
import { celHas, celLiteral, celSelect } from './cel-literal.js';
import type { KubeClients } from './kube-clients.js';
import { kubeCall, statusOf, toKubeApiError } from './kube-error.js';
import { describeObject, type KubeObject } from './kube-object.js';
import { BOOTSTRAP_COMPONENT, BOOTSTRAP_COMPONENT_LABEL, RUN_ID_LABEL } from './labels.js';

/** Field manager of the confinement objects the operator writes (cleanup deletes only objects it wrote). */
export const CONFINEMENT_FIELD_MANAGER = 'baton-confine';
/** Annotation with the plan digest a confinement enforces. */
export const PLAN_DIGEST_ANNOTATION = 'baton.dev/plan-digest';
/** Annotation with the instant after which the confined token no longer authenticates in any case. */
export const TOKEN_EXPIRES_ANNOTATION = 'baton.dev/token-expires-at';

const ADMISSION_API = 'admissionregistration.k8s.io/v1';
// Above this many characters a literal is compared field by field, in validations of their own: each CEL expression
// has its own cost budget, and a mismatch then names the field.
const SPLIT_LITERAL_CHARS = 16_384;

/** One object the confined identity may write, and exactly what it must hold afterwards. */
export interface ConfinedObject {
  /** API group ('' for core), plural resource and scope, as the admission request names them. */
  readonly group: string;
  readonly resource: string;
  /**
   * The object as the API server stores it once the push has written it (server-side defaults included), or the
   * manifest with its CRD's schema defaults for a custom kind. For a Secret only `type` and the keys are used,
   * never the values: anyone who can read admission policies could read them.
   */
  readonly expected: KubeObject;
}

/** What {@link planConfinement} needs. */
export interface ConfinementSpec {
  /** Name of the policy and its binding (the run's bootstrap name). */
  readonly name: string;
  readonly runId: string;
  /** Username of the confined identity, e.g. `system:serviceaccount:baton-system:baton-bootstrap-x`. */
  readonly username: string;
  /** `sha256:…` of the manifest set: what denial messages and the audit record name. */
  readonly planDigest: string;
  /** The only field manager the identity may write with. */
  readonly fieldManager: string;
  readonly objects: readonly ConfinedObject[];
}

/** An admission-level confinement of one identity to one plan, ready to install. */
export interface Confinement {
  /** Name of the ValidatingAdmissionPolicy and of its binding. */
  readonly name: string;
  readonly subject: string;
  readonly planDigest: string;
  readonly fieldManager: string;
  /** The writes allowed, as `Kind/namespace/name`. */
  readonly allowed: readonly string[];
  readonly policy: KubeObject;
  readonly binding: KubeObject;
  /** How many CEL validations the policy holds. */
  readonly validationCount: number;
  /** Size of the policy as JSON, in bytes (etcd refuses objects above ~1.5 MiB). */
  readonly policyBytes: number;
  /**
   * Objects pinned inline only by their security-relevant fields (too large to pin whole), as `Kind/namespace/name`:
   * the post-close check verifies the rest.
   */
  readonly partlyPinned: readonly string[];
}

interface Validation {
  readonly expression: string;
  readonly message?: string;
  readonly messageExpression?: string;
  readonly reason: 'Forbidden';
}

/**
 * Builds a ValidatingAdmissionPolicy and binding that deny every write by `spec.username` except create/apply of the
 * planned objects (matching group, resource, namespace and name), with field manager `spec.fieldManager`, leaving each
 * object exactly as planned: exact labels and annotations, no owner references, every other top-level field equal to
 * the expected object (for Roles and ClusterRoles the rules and aggregation, for bindings roleRef and subjects), and
 * for Secrets the type and the set of keys. No delete, no subresource, no other verb. Pure.
 * @throws {Error} when an expected object has no name.
 */
export function planConfinement(spec: ConfinementSpec): Confinement {
  const digest = spec.planDigest;
  const targets = spec.objects.map((o) => targetKey(o));
  const deny = (what: string) => `baton confinement of ${spec.username}: ${what} (plan ${digest})`;
  const validations: Validation[] = [
    {
      expression: "request.operation == 'CREATE' || request.operation == 'UPDATE'",
      messageExpression: `${JSON.stringify(deny('only create or apply of the planned objects is allowed; this was'))} + ' ' + request.operation`,
      reason: 'Forbidden',
    },
    {
      expression: "!has(request.subResource) || request.subResource == ''",
      message: deny('writes to subresources are not in the plan'),
      reason: 'Forbidden',
    },
    {
      expression: `variables.target in ${celLiteral(targets)}`,
      messageExpression: `${JSON.stringify(deny('not in the plan:'))} + ' ' + variables.target`,
      reason: 'Forbidden',
    },
    {
      expression: `has(request.options) && has(request.options.fieldManager) && request.options.fieldManager == ${celLiteral(spec.fieldManager)}`,
      message: deny(`the only field manager allowed is ${spec.fieldManager}`),
      reason: 'Forbidden',
    },
  ];
  spec.objects.forEach((o, i) => {
    const label = describeObject(o.expected);
    for (const check of contentChecks(o.expected)) {
      validations.push({
        expression: `variables.target != ${celLiteral(targets[i])} || (${check.expression})`,
        message: deny(`${label}: ${check.what} differs from the plan`),
        reason: 'Forbidden',
      });
    }
  });
  const metadata = {
    name: spec.name,
    labels: { [BOOTSTRAP_COMPONENT_LABEL]: BOOTSTRAP_COMPONENT, [RUN_ID_LABEL]: spec.runId },
    annotations: { [PLAN_DIGEST_ANNOTATION]: digest },
  };
  const policy: KubeObject = {
    apiVersion: ADMISSION_API,
    kind: 'ValidatingAdmissionPolicy',
    metadata,
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          {
            apiGroups: ['*'],
            apiVersions: ['*'],
            operations: ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'],
            resources: ['*/*'],
            scope: '*',
          },
        ],
      },
      matchConditions: [
        { name: 'bootstrap-identity', expression: `request.userInfo.username == ${celLiteral(spec.username)}` },
      ],
      variables: [
        {
          name: 'target',
          // `request.namespace` is absent for cluster-scoped objects, and a Namespace's own name for a Namespace;
          // DELETE has no `object`.
          expression:
            "object == null ? '' : request.resource.group + '/' + request.resource.resource + '/' + (has(request.namespace) && request.resource.resource != 'namespaces' ? request.namespace : '') + '/' + object.metadata.name",
        },
      ],
      validations,
    },
  };
  const binding: KubeObject = {
    apiVersion: ADMISSION_API,
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata,
    spec: { policyName: spec.name, validationActions: ['Deny'] },
  };
  return {
    name: spec.name,
    subject: spec.username,
    planDigest: digest,
    fieldManager: spec.fieldManager,
    allowed: spec.objects.map((o) => describeObject(o.expected)),
    policy,
    binding,
    validationCount: validations.length,
    policyBytes: Buffer.byteLength(JSON.stringify(policy)),
    partlyPinned: spec.objects.filter((o) => isPinnedPartly(o.expected)).map((o) => describeObject(o.expected)),
  };
}

const CLOSED_MARK = 'the push is complete and this identity may write nothing more';

/** The policy that replaces a confinement once the push is done: every write by the identity is denied. */
export function closedPolicy(c: Confinement): KubeObject {
  const spec = c.policy.spec as Record<string, unknown>;
  return {
    ...c.policy,
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: spec.matchConstraints,
      matchConditions: spec.matchConditions,
      validations: [
        {
          expression: 'false',
          message: `baton confinement of ${c.subject}: ${CLOSED_MARK} (plan ${c.planDigest})`,
          reason: 'Forbidden',
        },
      ],
    },
  };
}

/** `group/resource/namespace/name`, the key the policy's `target` variable computes for an admission request. */
function targetKey(o: ConfinedObject): string {
  if (!o.expected.metadata?.name) throw new Error('planConfinement: an expected object has no name');
  return `${o.group}/${o.resource}/${o.expected.metadata.namespace ?? ''}/${o.expected.metadata.name}`;
}

interface ContentCheck {
  readonly what: string;
  readonly expression: string;
}

// Fields the API server owns or that a write cannot set: never compared.
const SERVER_FIELDS = new Set(['apiVersion', 'kind', 'metadata', 'status']);

/** The checks that pin an object's content: metadata first, then each top-level field (split when large). */
function contentChecks(expected: KubeObject): ContentCheck[] {
  const meta = expected.metadata as { labels?: object; annotations?: object; finalizers?: unknown[] };
  const checks: ContentCheck[] = [
    { what: 'metadata.labels', expression: mapEquals('object.metadata', 'labels', meta.labels) },
    { what: 'metadata.annotations', expression: mapEquals('object.metadata', 'annotations', meta.annotations) },
    {
      what: 'metadata.ownerReferences',
      expression: '!has(object.metadata.ownerReferences) || size(object.metadata.ownerReferences) == 0',
    },
    {
      what: 'metadata.finalizers',
      expression:
        meta.finalizers && meta.finalizers.length > 0
          ? `has(object.metadata.finalizers) && object.metadata.finalizers == ${celLiteral(meta.finalizers)}`
          : '!has(object.metadata.finalizers) || size(object.metadata.finalizers) == 0',
    },
  ];
  if (expected.kind === 'Secret') return [...checks, ...secretChecks(expected)];
  const keys = Object.keys(expected)
    .filter((k) => !SERVER_FIELDS.has(k) && expected[k] !== undefined)
    .sort();
  checks.push({
    what: 'the set of top-level fields',
    expression: `object.all(k, k in ${celLiteral([...SERVER_FIELDS, ...keys])})`,
  });
  if (isPinnedPartly(expected)) return [...checks, ...securityFieldChecks(expected)];
  for (const k of keys) {
    const allocated = SERVER_ALLOCATED[expected.kind]?.[k];
    if (allocated) checks.push(...allocatedFieldChecks(k, expected[k] as Record<string, unknown>, allocated));
    else checks.push(...equalityChecks('object', k, expected[k]));
  }
  return checks;
}

/**
 * Above this many bytes of JSON an object is pinned inline only by what decides its power (see
 * {@link SECURITY_FIELDS}); the post-close check (`checkPushedObjects`) compares the rest once the window is
 * closed. Argo CD's Application CRD (416 KB) would otherwise take the policy past etcd's request limit.
 */
export const INLINE_PIN_MAX_BYTES = 65_536;

/**
 * What is pinned inline of an object above {@link INLINE_PIN_MAX_BYTES}, by kind (besides its target, metadata and
 * top-level fields): a CRD's group, names, scope and conversion (what API it serves, and whether a webhook sees its
 * objects); a role's rules and aggregation; a binding's role and subjects. Other kinds: the first level of `spec`
 * by its keys, nothing deeper.
 */
const SECURITY_FIELDS: Readonly<Record<string, readonly string[]>> = {
  CustomResourceDefinition: ['spec.group', 'spec.names', 'spec.scope', 'spec.conversion'],
  ClusterRole: ['rules', 'aggregationRule'],
  Role: ['rules'],
  ClusterRoleBinding: ['roleRef', 'subjects'],
  RoleBinding: ['roleRef', 'subjects'],
};

/** Whether an object is too large to pin whole inline (a Secret never is: only its keys are pinned). */
export function isPinnedPartly(expected: KubeObject): boolean {
  return expected.kind !== 'Secret' && Buffer.byteLength(JSON.stringify(expected)) > INLINE_PIN_MAX_BYTES;
}

/** The inline checks of a partly pinned object: each security-relevant field equal, or absent when planned absent. */
function securityFieldChecks(expected: KubeObject): ContentCheck[] {
  const out: ContentCheck[] = [];
  for (const path of SECURITY_FIELDS[expected.kind] ?? []) {
    const parts = path.split('.');
    const key = parts.pop()!;
    const base = parts.reduce((b, p) => celSelect(b, p), 'object');
    const parent = parts.reduce<unknown>((o, p) => (o as Record<string, unknown> | undefined)?.[p], expected);
    const value = (parent as Record<string, unknown> | undefined)?.[key];
    const guard = parts.map((_, i) =>
      celHas(
        parts.slice(0, i).reduce((b, p) => celSelect(b, p), 'object'),
        parts[i]!,
      ),
    );
    if (value === undefined) {
      out.push({ what: path, expression: `!(${[...guard, celHas(base, key)].join(' && ')})` });
      continue;
    }
    for (const c of equalityChecks(base, key, value, path))
      out.push({ what: c.what, expression: [...guard, `(${c.expression})`].join(' && ') });
  }
  const spec = expected.spec as Record<string, unknown> | undefined;
  if (spec && typeof spec === 'object')
    out.push({
      what: 'spec (fields)',
      expression: `has(object.spec) && object.spec.all(k, k in ${celLiteral(Object.keys(spec).filter((k) => spec[k] !== undefined))})`,
    });
  return out;
}

/**
 * Fields the API server fills in on create (before admission) that a plan cannot know, by kind and top-level field:
 * a Service's cluster IPs come from the allocator, so a dry run's answer differs from the real create. They may take
 * any address, but not `None` (a headless Service) unless the plan says so; a planned `None` is pinned.
 */
export const SERVER_ALLOCATED: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>> = {
  Service: { spec: ['clusterIP', 'clusterIPs'] },
};

/** `object.<key>` field by field as expected, the allocated fields checked as {@link SERVER_ALLOCATED} says. */
function allocatedFieldChecks(
  key: string,
  value: Record<string, unknown>,
  allocated: readonly string[],
): ContentCheck[] {
  const sel = celSelect('object', key);
  const present = celHas('object', key);
  const isHeadless = value.clusterIP === 'None';
  const free = isHeadless ? [] : allocated;
  const fields = Object.keys(value).filter((k) => value[k] !== undefined && !free.includes(k));
  const out: ContentCheck[] = [
    { what: `${key} (fields)`, expression: `${present} && ${sel}.all(k, k in ${celLiteral([...fields, ...free])})` },
  ];
  for (const k of fields) {
    for (const c of equalityChecks(sel, k, value[k], `${key}.${k}`))
      out.push({ what: c.what, expression: `${present} && (${c.expression})` });
  }
  for (const k of free) {
    const f = celSelect(sel, k);
    const notNone = typeof value[k] === 'object' ? `!('None' in ${f})` : `${f} != 'None'`;
    out.push({
      what: `${key}.${k} (allocated, not None)`,
      expression: `!${present} || !${celHas(sel, k)} || ${notNone}`,
    });
  }
  return out;
}

// A Secret's values never enter the policy: its type, its keys, nothing write-only, and immutability as planned.
function secretChecks(expected: KubeObject): ContentCheck[] {
  const keys = Object.keys((expected.data as object | undefined) ?? {}).sort();
  const type = typeof expected.type === 'string' ? expected.type : 'Opaque';
  return [
    { what: 'type', expression: `has(object.type) && object.type == ${celLiteral(type)}` },
    {
      what: 'the set of keys',
      expression:
        keys.length === 0
          ? '!has(object.data) || size(object.data) == 0'
          : `has(object.data) && size(object.data) == ${keys.length} && ${celLiteral(keys)}.all(k, k in object.data)`,
    },
    { what: 'stringData', expression: '!has(object.stringData)' },
    {
      what: 'immutable',
      expression:
        expected.immutable === true
          ? 'has(object.immutable) && object.immutable == true'
          : '!has(object.immutable) || object.immutable == false',
    },
    {
      what: 'the set of top-level fields',
      expression: `object.all(k, k in ${celLiteral([...SERVER_FIELDS, 'type', 'data', 'immutable'])})`,
    },
  ];
}

function mapEquals(base: string, key: string, value: object | undefined): string {
  const sel = celSelect(base, key);
  return value && Object.keys(value).length > 0
    ? `${celHas(base, key)} && ${sel} == ${celLiteral(value)}`
    : `!${celHas(base, key)} || size(${sel}) == 0`;
}

/**
 * `base.key == value`, or, when the literal is large, the same equality one level down (each map key, or each list
 * element plus the list's size) so that no single expression holds a huge literal.
 */
function equalityChecks(base: string, key: string, value: unknown, path = key): ContentCheck[] {
  const sel = celSelect(base, key);
  const present = celHas(base, key);
  const literal = celLiteral(value);
  if (literal.length <= SPLIT_LITERAL_CHARS || value === null || typeof value !== 'object')
    return [{ what: path, expression: `${present} && ${sel} == ${literal}` }];
  if (Array.isArray(value)) {
    const out: ContentCheck[] = [
      { what: `${path} (length)`, expression: `${present} && size(${sel}) == ${value.length}` },
    ];
    value.forEach((v, i) => {
      const literalI = celLiteral(v);
      out.push({
        what: `${path}[${i}]`,
        expression: `${present} && size(${sel}) > ${i} && ${sel}[${i}] == ${literalI}`,
      });
    });
    return out;
  }
  const keys = Object.keys(value).filter((k) => (value as Record<string, unknown>)[k] !== undefined);
  const out: ContentCheck[] = [
    { what: `${path} (fields)`, expression: `${present} && ${sel}.all(k, k in ${celLiteral(keys)})` },
  ];
  for (const k of keys) {
    for (const c of equalityChecks(sel, k, (value as Record<string, unknown>)[k], `${path}.${k}`)) {
      out.push({ what: c.what, expression: `${present} && (${c.expression})` });
    }
  }
  return out;
}

/** When each stage of a confinement happened. */
export interface ConfinementTimes {
  readonly installedAt: Date;
}

/**
 * Creates the policy, then its binding, with the operator's credential (field manager {@link CONFINEMENT_FIELD_MANAGER}).
 * A binding to an absent policy would match nothing, so the order matters.
 * @throws {ConfinementError} naming the object and the fix (e.g. the operator may not write admission policies).
 */
export async function installConfinement(operator: KubeClients, c: Confinement): Promise<void> {
  for (const o of [c.policy, c.binding]) {
    try {
      await operator.objects.create(o, undefined, undefined, CONFINEMENT_FIELD_MANAGER);
    } catch (err) {
      const status = statusOf(err);
      const cause = toKubeApiError(err, `create ${describeObject(o)}`);
      throw new ConfinementError(
        `could not install the confinement of the bootstrap identity (${cause.message})${status === 403 ? '; the operator needs create, update and delete on validatingadmissionpolicies and validatingadmissionpolicybindings (admissionregistration.k8s.io)' : status === 404 ? '; the API server does not serve admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (Kubernetes 1.34 or newer is required)' : ''}; nothing was pushed`,
        { cause, details: { object: describeObject(o), status } },
      );
    }
  }
}

/**
 * Replaces the policy by one that denies every write of the identity (the push is over; the token may still
 * authenticate for the API server's token cache). Takes effect within about a second.
 * @throws {KubeApiError} when the policy cannot be replaced.
 */
export async function closeConfinement(operator: KubeClients, c: Confinement): Promise<void> {
  await kubeCall(`close ${describeObject(c.policy)} (deny every write)`, async () => {
    const live = await operator.objects.read(c.policy);
    await operator.objects.replace(
      { ...closedPolicy(c), metadata: { ...c.policy.metadata, resourceVersion: live.metadata?.resourceVersion ?? '' } },
      undefined,
      undefined,
      CONFINEMENT_FIELD_MANAGER,
    );
  });
}

/**
 * Deletes the binding, then the policy; either already gone is fine.
 * @throws {KubeApiError} when a deletion fails for another reason.
 */
export async function removeConfinement(operator: KubeClients, name: string): Promise<string[]> {
  const deleted: string[] = [];
  for (const kind of ['ValidatingAdmissionPolicyBinding', 'ValidatingAdmissionPolicy']) {
    try {
      await operator.objects.delete({ apiVersion: ADMISSION_API, kind, metadata: { name } });
      deleted.push(`${kind}/${name}`);
    } catch (err) {
      if (statusOf(err) !== 404) throw toKubeApiError(err, `delete ${kind}/${name}`);
    }
  }
  return deleted;
}

/** The outcome of a confinement probe. */
export interface ConfinementProbe {
  readonly denied: boolean;
  /** HTTP status of the probe request. */
  readonly status: number;
  /** The API server's message (names the policy when it denied; never holds a secret). */
  readonly message: string;
}

/**
 * Asks the API server, as the confined identity, to create (dry run: nothing is stored) an object the plan does not
 * contain but RBAC allows, and reports whether the confinement denied it: the denial must name the policy and the plan
 * digest, so an RBAC 403 or another policy does not count. The probe is a ServiceAccount in `namespace` (every install
 * set creates one), or `like` renamed: a set without a ServiceAccount (a repair's) probes with one of its own kinds,
 * which its rules allow to create (`create` cannot be limited by name).
 * @throws {KubeApiError} on a transport failure.
 */
export function probeConfinement(
  confined: KubeClients,
  c: Confinement,
  namespace: string,
  like?: KubeObject,
): Promise<ConfinementProbe> {
  const name = `${c.name}-probe`.slice(0, 63).replace(/-+$/, '');
  const probe: KubeObject = like
    ? probeLike(like, name)
    : { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } };
  return deniedBy(c, c.planDigest, () => confined.objects.create(probe, undefined, 'All', c.fieldManager));
}

// A valid object of `o`'s kind under another name; a Secret without its values (none need to travel for a probe).
function probeLike(o: KubeObject, name: string): KubeObject {
  const metadata = { name, ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}) };
  if (o.kind === 'Secret')
    return { apiVersion: o.apiVersion, kind: o.kind, metadata, type: (o as { type?: string }).type ?? 'Opaque' };
  return { ...o, metadata };
}

/**
 * Asks the API server, as the confined identity, to re-apply a planned object (dry run: nothing is stored), and
 * reports whether the closed confinement denied it: once the push is over, not even the plan may be written.
 * @throws {KubeApiError} on a transport failure.
 */
export function probeClosed(confined: KubeClients, c: Confinement, planned: KubeObject): Promise<ConfinementProbe> {
  return deniedBy(c, CLOSED_MARK, () => confined.rest.apply(planned, { fieldManager: c.fieldManager, dryRun: true }));
}

async function deniedBy(c: Confinement, mark: string, write: () => Promise<unknown>): Promise<ConfinementProbe> {
  try {
    await write();
    return { denied: false, status: 200, message: '' };
  } catch (err) {
    const status = statusOf(err);
    const e = toKubeApiError(err, 'confinement probe');
    if (status === 0) throw e;
    return {
      denied: status === 403 && e.message.includes(c.name) && e.message.includes(mark),
      status,
      message: e.message,
    };
  }
}
