import { describe, expect, it } from 'vitest';
import { isProtected, isSubset } from './applier.js';

const p = { namespace: 'baton-system', serviceAccount: 'baton-controller', deployment: 'baton-controller' };

describe('isProtected', () => {
  it('protects the controller identity, its RBAC and its CRD', () => {
    expect(isProtected({ kind: 'Deployment', namespace: 'baton-system', name: 'baton-controller' }, p)).toBe(true);
    expect(isProtected({ kind: 'ServiceAccount', namespace: 'baton-system', name: 'baton-controller' }, p)).toBe(true);
    expect(isProtected({ kind: 'ClusterRole', namespace: undefined, name: 'baton-controller' }, p)).toBe(true);
    expect(isProtected({ kind: 'RoleBinding', namespace: 'baton-system', name: 'anything' }, p)).toBe(true);
    expect(isProtected({ kind: 'Namespace', namespace: undefined, name: 'baton-system' }, p)).toBe(true);
    expect(isProtected({ kind: 'CustomResourceDefinition', namespace: undefined, name: 'gitsyncs.baton.dev' }, p)).toBe(
      true,
    );
  });

  it('lets everything else be pruned', () => {
    expect(isProtected({ kind: 'Deployment', namespace: 'demo', name: 'baton-controller' }, p)).toBe(false);
    expect(isProtected({ kind: 'ClusterRole', namespace: undefined, name: 'app-reader' }, p)).toBe(false);
    expect(isProtected({ kind: 'ConfigMap', namespace: 'baton-system', name: 'x' }, p)).toBe(false);
  });
});

describe('isSubset', () => {
  it('ignores fields added by defaulting, but not changed values or list lengths', () => {
    const want = { spec: { ports: [{ port: 80 }], selector: { app: 'web' } } };
    expect(
      isSubset(want, {
        spec: { ports: [{ port: 80, protocol: 'TCP' }], selector: { app: 'web' }, clusterIP: '10.0.0.1' },
      }),
    ).toBe(true);
    expect(isSubset(want, { spec: { ports: [{ port: 81 }], selector: { app: 'web' } } })).toBe(false);
    expect(isSubset(want, { spec: { ports: [{ port: 80 }, { port: 443 }], selector: { app: 'web' } } })).toBe(false);
    expect(isSubset(want, { spec: { selector: { app: 'web' } } })).toBe(false);
    expect(isSubset({ data: { a: '1' } }, { data: { a: 1 } })).toBe(false);
  });
});
