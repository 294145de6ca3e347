/** The parts of a Kubernetes object baton reads before it knows the kind. */
export interface KubeObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly [key: string]: unknown };
  readonly [key: string]: unknown;
}

/** Where a kind lives in the API: group, plural resource, and whether it is namespaced. */
export interface KindInfo {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly isNamespaced: boolean;
}

/**
 * The kinds a controller install needs, and nothing else: the engine refuses every other kind, so this table is
 * also the allow-list.
 */
export const INSTALL_KINDS: Readonly<Record<string, KindInfo>> = {
  Namespace: { group: '', version: 'v1', resource: 'namespaces', isNamespaced: false },
  ServiceAccount: { group: '', version: 'v1', resource: 'serviceaccounts', isNamespaced: true },
  ConfigMap: { group: '', version: 'v1', resource: 'configmaps', isNamespaced: true },
  Service: { group: '', version: 'v1', resource: 'services', isNamespaced: true },
  Secret: { group: '', version: 'v1', resource: 'secrets', isNamespaced: true },
  Deployment: { group: 'apps', version: 'v1', resource: 'deployments', isNamespaced: true },
  StatefulSet: { group: 'apps', version: 'v1', resource: 'statefulsets', isNamespaced: true },
  Role: { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'roles', isNamespaced: true },
  RoleBinding: { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'rolebindings', isNamespaced: true },
  ClusterRole: { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles', isNamespaced: false },
  ClusterRoleBinding: {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    resource: 'clusterrolebindings',
    isNamespaced: false,
  },
  CustomResourceDefinition: {
    group: 'apiextensions.k8s.io',
    version: 'v1',
    resource: 'customresourcedefinitions',
    isNamespaced: false,
  },
};

/** `Kind/namespace/name` or `Kind/name`: how objects are named in messages and audit records. */
export function describeObject(o: Pick<KubeObject, 'kind' | 'metadata'>): string {
  return o.metadata.namespace ? `${o.kind}/${o.metadata.namespace}/${o.metadata.name}` : `${o.kind}/${o.metadata.name}`;
}

/**
 * Kinds defined by the CustomResourceDefinitions in `objects` (a controller's own source kind, e.g. GitSync), with
 * their group, served version, plural and scope, so that the install may carry one of its objects.
 */
export function kindsFromCrds(objects: readonly KubeObject[]): Record<string, KindInfo> {
  const out: Record<string, KindInfo> = {};
  for (const o of objects) {
    if (o.kind !== 'CustomResourceDefinition') continue;
    const spec = o.spec as
      | {
          group?: string;
          scope?: string;
          names?: { kind?: string; plural?: string };
          versions?: { name?: string; served?: boolean }[];
        }
      | undefined;
    const kind = spec?.names?.kind;
    const version = spec?.versions?.find((v) => v.served)?.name;
    if (!kind || !spec?.group || !spec.names?.plural || !version) continue;
    out[kind] = { group: spec.group, version, resource: spec.names.plural, isNamespaced: spec.scope !== 'Cluster' };
  }
  return out;
}
