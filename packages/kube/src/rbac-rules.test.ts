import { describe, expect, it } from 'vitest';
import type { KubeObject } from './kube-object.js';
import { computeBootstrapRules, flattenRules, hasWildcard, ruleAtoms } from './rbac-rules.js';

const o = (
  apiVersion: string,
  kind: string,
  name: string,
  namespace?: string,
  extra: Record<string, unknown> = {},
): KubeObject => ({
  apiVersion,
  kind,
  metadata: namespace ? { name, namespace } : { name },
  ...extra,
});
const RBAC = 'rbac.authorization.k8s.io/v1';
const install: KubeObject[] = [
  o('v1', 'Namespace', 'gitops-system'),
  o('v1', 'ServiceAccount', 'ctl', 'gitops-system'),
  o(RBAC, 'Role', 'ctl', 'gitops-system'),
  o(RBAC, 'RoleBinding', 'ctl', 'gitops-system', { roleRef: { kind: 'Role', name: 'ctl' } }),
  o(RBAC, 'ClusterRole', 'ctl-cluster'),
  o(RBAC, 'ClusterRoleBinding', 'ctl-cluster', undefined, { roleRef: { kind: 'ClusterRole', name: 'ctl-cluster' } }),
  o('v1', 'ConfigMap', 'b', 'gitops-system'),
  o('v1', 'ConfigMap', 'a', 'gitops-system'),
  o('apps/v1', 'Deployment', 'ctl', 'gitops-system'),
];

describe('computeBootstrapRules', () => {
  it('grants create, and get/patch by name, for exactly the objects of the set; bind/escalate only on its own roles', () => {
    const rules = computeBootstrapRules(install);
    expect(rules.cluster).toEqual([
      { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'patch'], resourceNames: ['gitops-system'] },
      { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterrolebindings'], verbs: ['create'] },
      {
        apiGroups: ['rbac.authorization.k8s.io'],
        resources: ['clusterrolebindings'],
        verbs: ['get', 'patch'],
        resourceNames: ['ctl-cluster'],
      },
      { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], verbs: ['create'] },
      {
        apiGroups: ['rbac.authorization.k8s.io'],
        resources: ['clusterroles'],
        verbs: ['get', 'patch'],
        resourceNames: ['ctl-cluster'],
      },
      {
        apiGroups: ['rbac.authorization.k8s.io'],
        resources: ['clusterroles'],
        verbs: ['bind'],
        resourceNames: ['ctl-cluster'],
      },
      {
        apiGroups: ['rbac.authorization.k8s.io'],
        resources: ['clusterroles'],
        verbs: ['escalate'],
        resourceNames: ['ctl-cluster'],
      },
    ]);
    const ns = rules.namespaced['gitops-system'];
    expect(Object.keys(rules.namespaced)).toEqual(['gitops-system']);
    expect(ns).toContainEqual({
      namespace: 'gitops-system',
      apiGroups: [''],
      resources: ['configmaps'],
      verbs: ['get', 'patch'],
      resourceNames: ['a', 'b'],
    });
    expect(ns).toContainEqual({
      namespace: 'gitops-system',
      apiGroups: ['apps'],
      resources: ['deployments'],
      verbs: ['create'],
    });
    expect(ns).toContainEqual({
      namespace: 'gitops-system',
      apiGroups: ['rbac.authorization.k8s.io'],
      resources: ['roles'],
      verbs: ['bind'],
      resourceNames: ['ctl'],
    });
    expect(ns).toContainEqual({
      namespace: 'gitops-system',
      apiGroups: ['rbac.authorization.k8s.io'],
      resources: ['roles'],
      verbs: ['escalate'],
      resourceNames: ['ctl'],
    });
    expect(ns?.some((r) => r.resources.includes('secrets') || r.resources.includes('pods'))).toBe(false);
  });

  it('lets the push patch (and create) a planned Secret but never read it', () => {
    const rules = flattenRules(computeBootstrapRules([o('v1', 'Secret', 'pull', 'ns')]));
    expect(rules).toEqual([
      { namespace: 'ns', apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
      { namespace: 'ns', apiGroups: [''], resources: ['secrets'], verbs: ['patch'], resourceNames: ['pull'] },
    ]);
  });

  it('never produces a wildcard, and never names cluster-admin', () => {
    const rules = flattenRules(computeBootstrapRules(install));
    expect(hasWildcard(rules)).toBe(false);
    expect(JSON.stringify(rules)).not.toContain('cluster-admin');
    // Namespaces are created by the mint step with the operator's credential: the token never creates one.
    expect([...ruleAtoms(rules)]).not.toContain('|namespaces|create|*');
  });

  it('is deterministic whatever the input order', () => {
    expect(computeBootstrapRules([...install].reverse())).toEqual(computeBootstrapRules(install));
  });

  it('refuses kinds outside the install set', () => {
    expect(() => computeBootstrapRules([o('v1', 'Pod', 'x', 'default')])).toThrow(/kind Pod is not an install kind/);
  });
});

describe('ruleAtoms', () => {
  it('compares rule lists however they are split or merged', () => {
    const merged = ruleAtoms([
      { apiGroups: [''], resources: ['configmaps', 'secrets'], verbs: ['get', 'patch'], resourceNames: ['a'] },
    ]);
    const split = ruleAtoms([
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get'], resourceNames: ['a'] },
      { apiGroups: [''], resources: ['configmaps'], verbs: ['patch'], resourceNames: ['a'] },
      { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'patch'], resourceNames: ['a'] },
    ]);
    expect(merged).toEqual(split);
    expect(ruleAtoms([{ apiGroups: [''], resources: ['configmaps'], verbs: ['create'] }])).toEqual(
      new Set(['|configmaps|create|*']),
    );
  });
});

describe('computeBootstrapRules with a CRD in the set', () => {
  const crd = o('apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'gitsyncs.baton.dev', undefined, {
    spec: {
      group: 'baton.dev',
      scope: 'Namespaced',
      names: { kind: 'GitSync', plural: 'gitsyncs' },
      versions: [{ name: 'v1alpha1', served: true }],
    },
  });

  it('grants the custom kind by its plural, group and name, only in its namespace', () => {
    const rules = computeBootstrapRules([crd, o('baton.dev/v1alpha1', 'GitSync', 'ctl', 'gitops-system')]);
    expect(rules.namespaced['gitops-system']).toContainEqual({
      namespace: 'gitops-system',
      apiGroups: ['baton.dev'],
      resources: ['gitsyncs'],
      verbs: ['get', 'patch'],
      resourceNames: ['ctl'],
    });
    expect(rules.cluster).toContainEqual({
      apiGroups: ['apiextensions.k8s.io'],
      resources: ['customresourcedefinitions'],
      verbs: ['get', 'patch'],
      resourceNames: ['gitsyncs.baton.dev'],
    });
  });

  it('grants a custom object whose CRD the controller already owns, from the set it was narrowed from', () => {
    const sync = o('baton.dev/v1alpha1', 'GitSync', 'ctl', 'baton-system');
    // Pushed alone (its CRD is the controller's already): the kind comes from the whole set, the CRD is not granted.
    const rules = computeBootstrapRules([sync], [crd, sync]);
    expect(rules.namespaced['baton-system']).toContainEqual({
      namespace: 'baton-system',
      apiGroups: ['baton.dev'],
      resources: ['gitsyncs'],
      verbs: ['get', 'patch'],
      resourceNames: ['ctl'],
    });
    expect(JSON.stringify(rules.cluster)).not.toContain('customresourcedefinitions');
    expect(() => computeBootstrapRules([sync])).toThrow(/kind GitSync is not an install kind/);
  });
});
