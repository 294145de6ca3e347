// The confinement of a bootstrap identity as objects: a ValidatingAdmissionPolicy that lets it write only what the
// plan declares, with the content pinned, and its closed form. Pure: no client (installing it is ./confinement.ts).
import { celLiteral } from './cel-literal.js';
import { contentChecks, isPinnedPartly } from './content-checks.js';
import { describeObject, type KubeObject } from './kube-object.js';
import { BOOTSTRAP_COMPONENT, BOOTSTRAP_COMPONENT_LABEL, RUN_ID_LABEL } from './labels.js';

/** Field manager of the confinement objects the operator writes (cleanup deletes only objects it wrote). */
export const CONFINEMENT_FIELD_MANAGER = 'baton-confine';
/** Annotation with the plan digest a confinement enforces. */
export const PLAN_DIGEST_ANNOTATION = 'baton.dev/plan-digest';
/** Annotation with the instant after which the confined token no longer authenticates in any case. */
export const TOKEN_EXPIRES_ANNOTATION = 'baton.dev/token-expires-at';

export const ADMISSION_API = 'admissionregistration.k8s.io/v1';

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

export const CLOSED_MARK = 'the push is complete and this identity may write nothing more';

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

export { INLINE_PIN_MAX_BYTES, isPinnedPartly, SERVER_ALLOCATED } from './content-checks.js';
