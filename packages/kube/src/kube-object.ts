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
  Secret: { group: '', version: 'v1', resource: 'secrets', isNamespaced: true },
  Deployment: { group: 'apps', version: 'v1', resource: 'deployments', isNamespaced: true },
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
