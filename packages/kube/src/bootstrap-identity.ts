import type { V1ObjectMeta } from '@kubernetes/client-node';
import type { KubeClients } from './kube-clients.js';
import { kubeCall, statusOf } from './kube-error.js';
import { BOOTSTRAP_COMPONENT, BOOTSTRAP_COMPONENT_LABEL, RUN_ID_LABEL } from './labels.js';
import { type BootstrapRules, toPolicyRule } from './rbac-rules.js';

export { BOOTSTRAP_COMPONENT, BOOTSTRAP_COMPONENT_LABEL, RUN_ID_LABEL };
/** The shortest lifetime TokenRequest accepts, in seconds. */
export const MIN_TOKEN_SECONDS = 600;

/** The field manager the operator's mint writes with. */
export const MINT_FIELD_MANAGER = 'baton-mint';

/** Names of the objects that make up one bootstrap identity. */
export interface BootstrapIdentityRef {
  readonly runId: string;
  /** Namespace of the ServiceAccount and the throwaway Secret. */
  readonly namespace: string;
  /** Name shared by the ServiceAccount, Secret, ClusterRole(Binding) and Roles(Bindings). */
  readonly name: string;
  /** Namespaces holding a Role and RoleBinding of this identity. */
  readonly roleNamespaces: readonly string[];
  /** Whether a ClusterRole and ClusterRoleBinding exist. */
  readonly hasClusterRole: boolean;
  /** Whether a confinement (ValidatingAdmissionPolicy and binding of the same name) exists. */
  readonly hasConfinement: boolean;
}

/** A minted bootstrap identity. `token` is the only secret: never log it, record only its fingerprint or JTI. */
export interface BootstrapIdentity extends BootstrapIdentityRef {
  readonly token: string;
  /** `system:serviceaccount:<ns>:<name>`. */
  readonly username: string;
  readonly secretUid: string;
  readonly secretResourceVersion: string;
  /** The JWT ID (the apiserver audit log's credential-id is `JTI=<jti>`). */
  readonly jti: string | undefined;
  readonly audiences: readonly string[];
  readonly issuedAt: Date;
  readonly expiresAt: Date;
}

/** Options of {@link mintBootstrapIdentity}. */
export interface MintOptions {
  readonly runId: string;
  /** Namespace for the ServiceAccount and throwaway Secret (must exist). */
  readonly namespace: string;
  readonly rules: BootstrapRules;
  /** Token lifetime in seconds. @default 600 (the API's minimum) */
  readonly expirationSeconds?: number;
  /** Wall clock, for `issuedAt`. */
  readonly now: () => Date;
  /**
   * Runs once the identity and its RBAC exist, before the token is requested: waits that need the identity but not
   * its token (e.g. until its confinement is active) stay out of the token's live window.
   */
  readonly beforeToken?: (username: string) => Promise<void>;
}

/** The name of the bootstrap objects of a run. */
export function bootstrapName(runId: string): string {
  return `baton-bootstrap-${runId}`.toLowerCase().slice(0, 63).replace(/-+$/, '');
}

/**
 * Creates, with the operator's credential, a ServiceAccount, a throwaway Secret, the computed Roles/ClusterRole and
 * their bindings, then a TokenRequest bound to the Secret (deleting the Secret kills the token).
 * Each object is labelled with the run id. On failure the objects created so far are left for
 * {@link revokeBootstrapIdentity}, which the caller runs in `finally` with {@link bootstrapRefFor}.
 * @throws {KubeApiError} naming the object that could not be created.
 */
export async function mintBootstrapIdentity(operator: KubeClients, options: MintOptions): Promise<BootstrapIdentity> {
  const ref = bootstrapRefFor(options.runId, options.namespace, options.rules);
  // Cleanup trusts only objects this manager created (see scanBootstrapObjects), so it is not configurable.
  const fieldManager = MINT_FIELD_MANAGER;
  const meta = (namespace?: string): V1ObjectMeta => ({
    name: ref.name,
    ...(namespace ? { namespace } : {}),
    labels: { [BOOTSTRAP_COMPONENT_LABEL]: BOOTSTRAP_COMPONENT, [RUN_ID_LABEL]: options.runId },
  });
  const ns = ref.namespace;
  await kubeCall(`create ServiceAccount ${ns}/${ref.name}`, () =>
    operator.core.createNamespacedServiceAccount({ namespace: ns, fieldManager, body: { metadata: meta(ns) } }),
  );
  const secret = await kubeCall(`create Secret ${ns}/${ref.name}`, () =>
    operator.core.createNamespacedSecret({ namespace: ns, fieldManager, body: { metadata: meta(ns), type: 'Opaque' } }),
  );
  const subject = { kind: 'ServiceAccount', name: ref.name, namespace: ns };
  for (const [roleNs, rules] of Object.entries(options.rules.namespaced)) {
    await kubeCall(`create Role ${roleNs}/${ref.name}`, () =>
      operator.rbac.createNamespacedRole({
        namespace: roleNs,
        fieldManager,
        body: { metadata: meta(roleNs), rules: rules.map(toPolicyRule) },
      }),
    );
    await kubeCall(`create RoleBinding ${roleNs}/${ref.name}`, () =>
      operator.rbac.createNamespacedRoleBinding({
        namespace: roleNs,
        fieldManager,
        body: {
          metadata: meta(roleNs),
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: ref.name },
          subjects: [subject],
        },
      }),
    );
  }
  if (ref.hasClusterRole) {
    await kubeCall(`create ClusterRole ${ref.name}`, () =>
      operator.rbac.createClusterRole({
        fieldManager,
        body: { metadata: meta(), rules: options.rules.cluster.map(toPolicyRule) },
      }),
    );
    await kubeCall(`create ClusterRoleBinding ${ref.name}`, () =>
      operator.rbac.createClusterRoleBinding({
        fieldManager,
        body: {
          metadata: meta(),
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: ref.name },
          subjects: [subject],
        },
      }),
    );
  }
  await options.beforeToken?.(`system:serviceaccount:${ns}:${ref.name}`);
  const issuedAt = options.now();
  const tr = await kubeCall(`TokenRequest for ServiceAccount ${ns}/${ref.name}`, () =>
    operator.core.createNamespacedServiceAccountToken({
      namespace: ns,
      name: ref.name,
      body: {
        spec: {
          expirationSeconds: options.expirationSeconds ?? MIN_TOKEN_SECONDS,
          audiences: [],
          boundObjectRef: { kind: 'Secret', apiVersion: 'v1', name: ref.name, uid: secret.metadata?.uid ?? '' },
        },
      },
    }),
  );
  const token = tr.status?.token ?? '';
  const claims = decodeJwtClaims(token);
  return {
    ...ref,
    token,
    username: `system:serviceaccount:${ns}:${ref.name}`,
    secretUid: secret.metadata?.uid ?? '',
    secretResourceVersion: secret.metadata?.resourceVersion ?? '',
    jti: typeof claims.jti === 'string' ? claims.jti : undefined,
    audiences: tr.spec.audiences?.length ? tr.spec.audiences : toStringArray(claims.aud),
    issuedAt,
    expiresAt: tr.status?.expirationTimestamp
      ? new Date(tr.status.expirationTimestamp)
      : new Date(issuedAt.getTime() + MIN_TOKEN_SECONDS * 1000),
  };
}

/** The object names a run's bootstrap identity uses (known before anything is created). */
export function bootstrapRefFor(runId: string, namespace: string, rules: BootstrapRules): BootstrapIdentityRef {
  return {
    runId,
    namespace,
    name: bootstrapName(runId),
    roleNamespaces: Object.keys(rules.namespaced).sort(),
    hasClusterRole: rules.cluster.length > 0,
    hasConfinement: true,
  };
}

/** What {@link revokeBootstrapIdentity} deleted. */
export interface RevokeResult {
  /** The throwaway Secret whose deletion invalidates the token, when it existed. */
  readonly secret:
    | { readonly namespace: string; readonly name: string; readonly uid: string; readonly resourceVersion: string }
    | undefined;
  /** When the Secret's deletion was acknowledged. */
  readonly secretDeletedAt: Date;
  /** Every object deleted, as Kind/namespace/name. */
  readonly deleted: readonly string[];
}

/**
 * Deletes the throwaway Secret first (the bound token stops authenticating), then the ServiceAccount and the RBAC
 * objects. Objects already gone are skipped, so it is safe to run twice and after a partial mint.
 * @throws {KubeApiError} when a deletion fails for another reason than "not found"; the rest are still attempted.
 */
export async function revokeBootstrapIdentity(
  operator: KubeClients,
  ref: BootstrapIdentityRef,
  now: () => Date,
): Promise<RevokeResult> {
  const deleted: string[] = [];
  const errors: unknown[] = [];
  const attempt = async (what: string, call: () => Promise<unknown>) => {
    try {
      await kubeCall(`delete ${what}`, call);
      deleted.push(what);
    } catch (err) {
      if (statusOf(err) !== 404) errors.push(err);
    }
  };
  const ns = ref.namespace;
  let secret: RevokeResult['secret'];
  try {
    const s = await operator.core.readNamespacedSecret({ namespace: ns, name: ref.name });
    secret = {
      namespace: ns,
      name: ref.name,
      uid: s.metadata?.uid ?? '',
      resourceVersion: s.metadata?.resourceVersion ?? '',
    };
  } catch (err) {
    if (statusOf(err) !== 404) errors.push(err);
  }
  await attempt(`Secret/${ns}/${ref.name}`, () =>
    operator.core.deleteNamespacedSecret({ namespace: ns, name: ref.name, gracePeriodSeconds: 0 }),
  );
  const secretDeletedAt = now();
  await attempt(`ServiceAccount/${ns}/${ref.name}`, () =>
    operator.core.deleteNamespacedServiceAccount({ namespace: ns, name: ref.name }),
  );
  for (const roleNs of ref.roleNamespaces) {
    await attempt(`RoleBinding/${roleNs}/${ref.name}`, () =>
      operator.rbac.deleteNamespacedRoleBinding({ namespace: roleNs, name: ref.name }),
    );
    await attempt(`Role/${roleNs}/${ref.name}`, () =>
      operator.rbac.deleteNamespacedRole({ namespace: roleNs, name: ref.name }),
    );
  }
  if (ref.hasClusterRole) {
    await attempt(`ClusterRoleBinding/${ref.name}`, () => operator.rbac.deleteClusterRoleBinding({ name: ref.name }));
    await attempt(`ClusterRole/${ref.name}`, () => operator.rbac.deleteClusterRole({ name: ref.name }));
  }
  if (errors.length > 0) throw errors[0];
  return { secret, secretDeletedAt, deleted };
}

/**
 * Ends the identity's privilege without ending its authentication: deletes its RoleBindings and ClusterRoleBinding
 * (in parallel), so the RBAC authorizer refuses it everything within milliseconds, while its token, its Secret and its
 * ServiceAccount stay for the revocation proof. Bindings already gone are skipped, so it is safe to run twice;
 * {@link revokeBootstrapIdentity} later deletes the roles.
 * @returns the bindings deleted, as Kind/namespace/name.
 * @throws {KubeApiError} when a deletion fails for another reason than "not found" (the others are still attempted).
 */
export async function unbindBootstrapIdentity(operator: KubeClients, ref: BootstrapIdentityRef): Promise<string[]> {
  const calls: [string, () => Promise<unknown>][] = ref.roleNamespaces.map((ns) => [
    `RoleBinding/${ns}/${ref.name}`,
    () => operator.rbac.deleteNamespacedRoleBinding({ namespace: ns, name: ref.name }),
  ]);
  if (ref.hasClusterRole)
    calls.push([`ClusterRoleBinding/${ref.name}`, () => operator.rbac.deleteClusterRoleBinding({ name: ref.name })]);
  const results = await Promise.allSettled(calls.map(([what, call]) => kubeCall(`delete ${what}`, call)));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected' && statusOf(r.reason) !== 404);
  if (failed) throw failed.reason;
  return calls.filter((_, i) => results[i]!.status === 'fulfilled').map(([what]) => what);
}

/** Decodes a JWT's claims without verifying it (only to read `jti`, `sub`, `aud`); `{}` when it is not a JWT. */
export function decodeJwtClaims(token: string): Record<string, unknown> {
  const part = token.split('.')[1];
  if (!part) return {};
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
}

function toStringArray(v: unknown): string[] {
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === 'string');
  return typeof v === 'string' ? [v] : [];
}
