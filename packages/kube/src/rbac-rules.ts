import type { V1PolicyRule } from '@kubernetes/client-node';
import { INSTALL_KINDS, type KindInfo, type KubeObject, kindsFromCrds } from './kube-object.js';

/** An RBAC rule in baton's own shape (sorted, no wildcards). `namespace` absent means cluster-wide. */
export interface RbacRule {
  readonly namespace?: string;
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly verbs: readonly string[];
  readonly resourceNames?: readonly string[];
}

/** The rules of the bootstrap credential: cluster-wide ones (a ClusterRole) and one Role per namespace. */
export interface BootstrapRules {
  /** Rules bound cluster-wide (cluster-scoped objects). */
  readonly cluster: readonly RbacRule[];
  /** Rules bound in one namespace each, keyed by namespace. */
  readonly namespaced: Readonly<Record<string, readonly RbacRule[]>>;
}

const RBAC_GROUP = 'rbac.authorization.k8s.io';

/**
 * Computes the narrowest rules that let a credential server-side-apply exactly `objects`:
 * - `get` and `patch` restricted by `resourceNames` to the objects' names (`patch` alone on Secrets: the push never
 *   reads one, so a stolen token cannot read the planned Secrets' values);
 * - `create` without names (the API cannot restrict it by name), except for Namespaces, which the mint step
 *   creates with the operator's credential so that the Roles below have somewhere to live;
 * - `escalate` on the Roles/ClusterRoles in the set and `bind` on the roles their bindings reference, by name,
 *   so the credential can install the controller's RBAC without holding the controller's permissions.
 * Never a wildcard. The input must already be validated (only {@link INSTALL_KINDS} and kinds defined by a
 * CustomResourceDefinition of the same set). `wholeSet`: the validated set `objects` were narrowed from (a run that
 * pushes only what the controller does not own yet, a repair), whose CRDs define kinds `objects` may hold without them.
 */
export function computeBootstrapRules(
  objects: readonly KubeObject[],
  wholeSet: readonly KubeObject[] = objects,
): BootstrapRules {
  return groupByScope(rulesFor(collectGrants(objects, wholeSet)));
}

/** Names per `scope \0 group \0 resource` key. */
type NamesByKey = Map<string, Set<string>>;

/** The names each verb needs, by scope, API group and resource. */
interface Grants {
  /** `get`/`patch` by name (and `create`, except on namespaces): the objects themselves. */
  readonly names: NamesByKey;
  /** `escalate`: the Roles and ClusterRoles of the set. */
  readonly escalate: NamesByKey;
  /** `bind`: the roles the set's bindings reference. */
  readonly bind: NamesByKey;
}

function collectGrants(objects: readonly KubeObject[], wholeSet: readonly KubeObject[]): Grants {
  const kinds: Readonly<Record<string, KindInfo>> = { ...kindsFromCrds([...objects, ...wholeSet]), ...INSTALL_KINDS };
  const grants: Grants = { names: new Map(), escalate: new Map(), bind: new Map() };
  for (const o of objects) {
    const info = kinds[o.kind];
    if (!info)
      throw new Error(`computeBootstrapRules: kind ${o.kind} is not an install kind; validate the manifest set first`);
    const scope = info.isNamespaced ? (o.metadata.namespace ?? '') : '';
    addName(grants.names, key(scope, info.group, info.resource), o.metadata.name);
    if (o.kind === 'Role' || o.kind === 'ClusterRole')
      addName(grants.escalate, key(scope, RBAC_GROUP, info.resource), o.metadata.name);
    const ref = (o as { roleRef?: { kind?: string; name?: string } }).roleRef;
    if ((o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding') && ref?.name && ref.kind) {
      // A RoleBinding to a ClusterRole is checked as `bind` on the ClusterRole in the binding's namespace.
      const refResource = ref.kind === 'ClusterRole' ? 'clusterroles' : 'roles';
      addName(grants.bind, key(scope, RBAC_GROUP, refResource), ref.name);
    }
  }
  return grants;
}

function addName(m: NamesByKey, key: string, name: string): void {
  const s = m.get(key) ?? new Set<string>();
  s.add(name);
  m.set(key, s);
}

/** The rules in a stable order: objects (create, then get/patch by name), then bind, then escalate. */
function rulesFor(grants: Grants): RbacRule[] {
  const rules: RbacRule[] = [];
  const rule = (scope: string, r: Omit<RbacRule, 'namespace'>) => rules.push(scope ? { namespace: scope, ...r } : r);
  for (const [k, set] of sorted(grants.names)) {
    const [scope, group, resource] = k.split('\0') as [string, string, string];
    if (resource !== 'namespaces') rule(scope, { apiGroups: [group], resources: [resource], verbs: ['create'] });
    // Server-side apply reads the stored object inside the API server: `patch` (and `create` for a new object) is
    // all it needs, tried against the real apiserver (handoff/confinement.test.ts pushes Secrets without `get`). A
    // Secret is the one kind the push never reads back, so the identity may not read a planned Secret's values.
    const verbs = group === '' && resource === 'secrets' ? ['patch'] : ['get', 'patch'];
    rule(scope, { apiGroups: [group], resources: [resource], verbs, resourceNames: [...set].sort() });
  }
  for (const [verb, m] of [
    ['bind', grants.bind],
    ['escalate', grants.escalate],
  ] as const) {
    for (const [k, set] of sorted(m)) {
      const [scope, group, resource] = k.split('\0') as [string, string, string];
      rule(scope, { apiGroups: [group], resources: [resource], verbs: [verb], resourceNames: [...set].sort() });
    }
  }
  return rules;
}

/** Cluster-wide rules, and the namespaced ones keyed by namespace (sorted), each list in its original order. */
function groupByScope(rules: readonly RbacRule[]): BootstrapRules {
  const namespaces = [...new Set(rules.flatMap((r) => (r.namespace === undefined ? [] : [r.namespace])))];
  const namespaced: Record<string, RbacRule[]> = {};
  for (const ns of namespaces.sort((a, b) => a.localeCompare(b))) {
    namespaced[ns] = rules.filter((r) => r.namespace === ns);
  }
  return { cluster: rules.filter((r) => r.namespace === undefined), namespaced };
}

function key(scope: string, group: string, resource: string): string {
  return `${scope}\0${group}\0${resource}`;
}

function sorted<V>(m: Map<string, V>): [string, V][] {
  return [...m].sort(([a], [b]) => a.localeCompare(b));
}

/** Every rule of `rules` flattened to one list, namespaced rules carrying their namespace. */
export function flattenRules(rules: BootstrapRules): RbacRule[] {
  return [...rules.cluster, ...Object.values(rules.namespaced).flat()];
}

/** Converts a rule to the API's PolicyRule (dropping baton's `namespace`). */
export function toPolicyRule(rule: RbacRule): V1PolicyRule {
  const r: V1PolicyRule = { apiGroups: [...rule.apiGroups], resources: [...rule.resources], verbs: [...rule.verbs] };
  if (rule.resourceNames) r.resourceNames = [...rule.resourceNames];
  return r;
}

/**
 * Flattens rules to atoms `group|resource|verb|name` (`*` when unrestricted by name), so that two rule lists can
 * be compared however the API server merges or splits them.
 */
export function ruleAtoms(
  rules: readonly {
    apiGroups?: readonly string[];
    resources?: readonly string[];
    verbs: readonly string[];
    resourceNames?: readonly string[];
  }[],
): Set<string> {
  const atoms = new Set<string>();
  for (const r of rules) {
    const names = r.resourceNames && r.resourceNames.length > 0 ? r.resourceNames : ['*'];
    for (const g of r.apiGroups ?? []) {
      for (const res of r.resources ?? []) {
        for (const v of r.verbs) for (const n of names) atoms.add(`${g}|${res}|${v}|${n}`);
      }
    }
  }
  return atoms;
}

/** True when a rule list grants a wildcard anywhere (group, resource, verb) or cluster-admin-like breadth. */
export function hasWildcard(rules: readonly RbacRule[]): boolean {
  return rules.some((r) => [...r.apiGroups, ...r.resources, ...r.verbs].includes('*'));
}
