// What earlier runs left behind (a run killed with kill -9): found by the bootstrap labels, kept only when baton
// provably created them, and removed with their confinement; anything else with the labels is reported, never touched.
import type { V1ObjectMeta } from '@kubernetes/client-node';
import {
  type BootstrapIdentityRef,
  bootstrapName,
  MINT_FIELD_MANAGER,
  type RevokeResult,
  revokeBootstrapIdentity,
} from './bootstrap-identity.js';
import { removeConfinement } from './confinement.js';
import { CONFINEMENT_FIELD_MANAGER } from './confinement-policy.js';
import type { KubeClients } from './kube-clients.js';
import { kubeCall } from './kube-error.js';
import { BOOTSTRAP_COMPONENT, BOOTSTRAP_COMPONENT_LABEL, RUN_ID_LABEL } from './labels.js';

/**
 * Removes a leftover identity of another run: {@link revokeBootstrapIdentity}, then its confinement (last, so the
 * identity cannot write while its token may still be cached).
 * @throws {KubeApiError} when a deletion fails for another reason than "not found".
 */
export async function removeBootstrapLeftover(
  operator: KubeClients,
  ref: BootstrapIdentityRef,
  now: () => Date,
): Promise<RevokeResult> {
  const r = await revokeBootstrapIdentity(operator, ref, now);
  if (!ref.hasConfinement) return r;
  return { ...r, deleted: [...r.deleted, ...(await removeConfinement(operator, ref.name))] };
}

/** What {@link scanBootstrapObjects} found. */
export interface BootstrapScan {
  /** Identities of earlier runs that baton created, safe to revoke. */
  readonly leftovers: BootstrapIdentityRef[];
  /**
   * Objects that carry the bootstrap labels but that baton did not create as a run's bootstrap objects (wrong name
   * for the run id, wrong namespace, or not written by baton's mint or confinement field manager), as
   * `Kind/namespace/name: why`. Never deleted: a label is not proof of ownership.
   */
  readonly suspicious: string[];
}

type Found = { kind: string; metadata: V1ObjectMeta | undefined };

/**
 * Finds bootstrap identities left behind (e.g. by a run killed with `kill -9`) by their labels, in `namespace`,
 * cluster-wide RBAC and admission policies, and keeps only objects baton created: named `bootstrapName(runId)` for
 * their run-id label, in the expected namespace, and written by baton's own field manager. Everything else carrying
 * the labels is reported as suspicious and left alone, so a labelled decoy cannot make the operator's credential
 * delete someone else's object.
 * @throws {KubeApiError} when a list fails.
 */
export async function scanBootstrapObjects(operator: KubeClients, namespace: string): Promise<BootstrapScan> {
  const labelSelector = `${BOOTSTRAP_COMPONENT_LABEL}=${BOOTSTRAP_COMPONENT}`;
  const list = (what: string, call: () => Promise<{ items: { metadata?: V1ObjectMeta }[] }>, kind: string) =>
    kubeCall(`list bootstrap ${what}`, call).then((r) => r.items.map((o): Found => ({ kind, metadata: o.metadata })));
  const admission = (kind: string) => () =>
    operator.objects.list(
      'admissionregistration.k8s.io/v1',
      kind,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      labelSelector,
    );
  const found = (
    await Promise.all([
      list('Secrets', () => operator.core.listNamespacedSecret({ namespace, labelSelector }), 'Secret'),
      list(
        'ServiceAccounts',
        () => operator.core.listNamespacedServiceAccount({ namespace, labelSelector }),
        'ServiceAccount',
      ),
      list('Roles', () => operator.rbac.listRoleForAllNamespaces({ labelSelector }), 'Role'),
      list('RoleBindings', () => operator.rbac.listRoleBindingForAllNamespaces({ labelSelector }), 'RoleBinding'),
      list('ClusterRoles', () => operator.rbac.listClusterRole({ labelSelector }), 'ClusterRole'),
      list('ClusterRoleBindings', () => operator.rbac.listClusterRoleBinding({ labelSelector }), 'ClusterRoleBinding'),
      list('ValidatingAdmissionPolicies', admission('ValidatingAdmissionPolicy'), 'ValidatingAdmissionPolicy'),
      list(
        'ValidatingAdmissionPolicyBindings',
        admission('ValidatingAdmissionPolicyBinding'),
        'ValidatingAdmissionPolicyBinding',
      ),
    ])
  ).flat();
  const byRun = new Map<string, { roleNamespaces: Set<string>; hasClusterRole: boolean; hasConfinement: boolean }>();
  const suspicious: string[] = [];
  for (const o of found) {
    const m = o.metadata;
    const id = m?.namespace ? `${o.kind}/${m.namespace}/${m?.name}` : `${o.kind}/${m?.name}`;
    const why = suspicion(o, namespace);
    if (why) {
      suspicious.push(`${id}: ${why}`);
      continue;
    }
    const runId = m?.labels?.[RUN_ID_LABEL] ?? '';
    const e = byRun.get(runId) ?? { roleNamespaces: new Set<string>(), hasClusterRole: false, hasConfinement: false };
    if (o.kind === 'Role' || o.kind === 'RoleBinding') e.roleNamespaces.add(m?.namespace ?? '');
    if (o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding') e.hasClusterRole = true;
    if (o.kind.startsWith('ValidatingAdmissionPolicy')) e.hasConfinement = true;
    byRun.set(runId, e);
  }
  const leftovers = [...byRun].map(([runId, e]) => ({
    runId,
    namespace,
    name: bootstrapName(runId),
    roleNamespaces: [...e.roleNamespaces].sort(),
    hasClusterRole: e.hasClusterRole,
    hasConfinement: e.hasConfinement,
  }));
  return { leftovers, suspicious: suspicious.sort() };
}

/** Why a labelled object is not one of baton's bootstrap objects, or undefined when it is. */
function suspicion(o: Found, namespace: string): string | undefined {
  const m = o.metadata;
  const runId = m?.labels?.[RUN_ID_LABEL];
  if (!runId || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(runId)) return `its ${RUN_ID_LABEL} label is not a run id`;
  if (m?.name !== bootstrapName(runId))
    return `its name is not ${bootstrapName(runId)}, the name of run ${runId}'s objects`;
  if ((o.kind === 'Secret' || o.kind === 'ServiceAccount') && m.namespace !== namespace)
    return `a bootstrap ${o.kind} lives in ${namespace}`;
  const creator = o.kind.startsWith('ValidatingAdmissionPolicy') ? CONFINEMENT_FIELD_MANAGER : MINT_FIELD_MANAGER;
  if (!(m.managedFields ?? []).some((f) => f.manager === creator && f.operation !== 'Apply'))
    return `it was not created by baton (no ${creator} entry in managedFields)`;
  return undefined;
}

/**
 * The bootstrap identities baton created and a killed run left behind (see {@link scanBootstrapObjects}; suspicious
 * objects are not included).
 * @throws {KubeApiError} when a list fails.
 */
export async function findBootstrapLeftovers(
  operator: KubeClients,
  namespace: string,
): Promise<BootstrapIdentityRef[]> {
  return (await scanBootstrapObjects(operator, namespace)).leftovers;
}
