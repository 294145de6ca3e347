import { describe, expect, it } from 'vitest';
import { celLiteral } from './cel-literal.js';
import { type ConfinedObject, closedPolicy, planConfinement } from './confinement.js';
import { withSchemaDefaults } from './expected-objects.js';

const role = {
  group: 'rbac.authorization.k8s.io',
  resource: 'clusterroles',
  expected: {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'ctl', labels: { app: 'ctl' } },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
  },
};
const secret = {
  group: '',
  resource: 'secrets',
  expected: {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'pull', namespace: 'sys' },
    type: 'Opaque',
    data: { password: 'c2VjcmV0LXZhbHVl', username: 'dXNlcg==' },
  },
};

function plan(objects: readonly ConfinedObject[] = [role, secret]) {
  return planConfinement({
    name: 'baton-bootstrap-r1',
    runId: 'r1',
    username: 'system:serviceaccount:sys:baton-bootstrap-r1',
    planDigest: 'sha256:abc',
    fieldManager: 'baton-bootstrap',
    objects,
  });
}

describe('celLiteral', () => {
  it('writes JSON values as CEL literals that compare by value', () => {
    expect(celLiteral({ a: [1, 'x"y', true, null], b: 2.5 })).toBe(
      '{"a": dyn([dyn(1), dyn("x\\"y"), dyn(true), dyn(null)]), "b": dyn(2.5)}',
    );
    expect(celLiteral({ a: { x: 'y' }, b: { z: 1 }, c: { w: 'v' } })).toBe(
      '{"a": dyn({"x": "y"}), "b": dyn({"z": 1}), "c": dyn({"w": "v"})}',
    );
    expect(celLiteral({ a: 'x', b: 'y' })).toBe('{"a": "x", "b": "y"}');
    expect(celLiteral([1, 2])).toBe('[1, 2]');
    expect(() => celLiteral(Number.NaN)).toThrow(/no CEL literal/);
  });
});

describe('planConfinement', () => {
  it('matches only the run identity and allows exactly the planned targets', () => {
    const c = plan();
    const spec = c.policy.spec as {
      matchConditions: { expression: string }[];
      validations: { expression: string }[];
      failurePolicy: string;
    };
    expect(spec.failurePolicy).toBe('Fail');
    expect(spec.matchConditions[0]?.expression).toBe(
      'request.userInfo.username == "system:serviceaccount:sys:baton-bootstrap-r1"',
    );
    expect(c.allowed).toEqual(['ClusterRole/ctl', 'Secret/sys/pull']);
    const all = spec.validations.map((v) => v.expression).join('\n');
    expect(all).toContain('variables.target in ["rbac.authorization.k8s.io/clusterroles//ctl", "/secrets/sys/pull"]');
    expect(all).toContain('object.rules == [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]');
    expect(all).toContain('request.options.fieldManager == "baton-bootstrap"');
    expect(c.binding).toMatchObject({ spec: { policyName: 'baton-bootstrap-r1', validationActions: ['Deny'] } });
  });

  it('never puts a Secret value into the policy, only its type and keys', () => {
    const text = JSON.stringify(plan().policy);
    expect(text).not.toContain('c2VjcmV0LXZhbHVl');
    expect(text).not.toContain('dXNlcg==');
    expect(text).toContain('[\\"password\\", \\"username\\"].all(k, k in object.data)');
  });

  it('pins a Service but its allocated cluster IPs, which may be any address except None (headless) unless planned', () => {
    const service = (clusterIP: string) => ({
      group: '',
      resource: 'services',
      expected: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'src', namespace: 'sys' },
        spec: { clusterIP, clusterIPs: [clusterIP], type: 'ClusterIP', ports: [{ port: 80, protocol: 'TCP' }] },
      },
    });
    const exprs = (c: ReturnType<typeof plan>) =>
      (c.policy.spec as { validations: { expression: string }[] }).validations.map((v) => v.expression).join('\n');
    const allocated = exprs(plan([service('10.0.0.12')]));
    expect(allocated).not.toContain('10.0.0.12');
    expect(allocated).toContain("object.spec.clusterIP != 'None'");
    expect(allocated).toContain("!('None' in object.spec.clusterIPs)");
    expect(allocated).toContain('object.spec.type == "ClusterIP"');
    const headless = exprs(plan([service('None')]));
    expect(headless).toContain('object.spec.clusterIP == "None"');
  });

  it('compares a large field piece by piece so no expression holds a huge literal', () => {
    const big = {
      group: 'apiextensions.k8s.io',
      resource: 'customresourcedefinitions',
      expected: {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: 'big.example.dev' },
        spec: { group: 'example.dev', versions: [{ name: 'v1', blob: 'x'.repeat(40_000) }, { name: 'v2' }] },
      },
    };
    const c = plan([big]);
    const exprs = (c.policy.spec as { validations: { expression: string }[] }).validations.map((v) => v.expression);
    expect(Math.max(...exprs.map((e) => e.length))).toBeLessThan(42_000);
    expect(exprs.some((e) => e.includes('size(object.spec.versions) == 2'))).toBe(true);
  });

  it('pins an object too large to inline by its security-relevant fields only, and names it as partly pinned', () => {
    const crd = {
      group: 'apiextensions.k8s.io',
      resource: 'customresourcedefinitions',
      expected: {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: 'applications.argoproj.io' },
        spec: {
          group: 'argoproj.io',
          names: { kind: 'Application', plural: 'applications' },
          scope: 'Namespaced',
          conversion: { strategy: 'None' },
          versions: [{ name: 'v1alpha1', schema: 'x'.repeat(400_000) }],
        },
      },
    };
    const role = {
      group: 'rbac.authorization.k8s.io',
      resource: 'clusterroles',
      expected: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'huge' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
        aggregationRule: undefined,
        padding: 'y'.repeat(70_000),
      },
    };
    const c = plan([crd, role]);
    expect(c.partlyPinned).toEqual(['CustomResourceDefinition/applications.argoproj.io', 'ClusterRole/huge']);
    expect(c.policyBytes).toBeLessThan(20_000);
    const v = (c.policy.spec as { validations: { expression: string; message: string }[] }).validations;
    const about = (what: string) => v.filter((x) => x.message?.includes(what)).map((x) => x.expression);
    expect(about('spec.group differs')[0]).toContain('object.spec.group == "argoproj.io"');
    expect(about('spec.names differs')[0]).toContain('"plural": "applications"');
    expect(about('spec.scope differs')[0]).toContain('"Namespaced"');
    expect(about('spec.conversion differs')[0]).toContain('"None"');
    expect(about('spec (fields) differs')[0]).toContain('"versions"');
    expect(about('ClusterRole/huge: rules differs')[0]).toContain('"configmaps"');
    // Planned without aggregation: it must stay absent.
    expect(about('ClusterRole/huge: aggregationRule differs')[0]).toContain('!(has(object.aggregationRule))');
    expect(JSON.stringify(c.policy)).not.toContain('xxxxxxxx');
  });

  it('closes to a single deny-all validation for the same identity', () => {
    const c = plan();
    const closed = closedPolicy(c).spec as { validations: { expression: string }[]; matchConditions: unknown };
    expect(closed.validations).toHaveLength(1);
    expect(closed.validations[0]?.expression).toBe('false');
    expect(closed.matchConditions).toEqual((c.policy.spec as { matchConditions: unknown }).matchConditions);
  });
});

describe('withSchemaDefaults', () => {
  it('fills absent properties with their defaults, descending into present ones', () => {
    const schema = {
      type: 'object',
      properties: {
        spec: {
          type: 'object',
          properties: {
            ref: { type: 'object', default: { branch: 'main' } },
            interval: { type: 'string', default: '1m' },
            items: { type: 'array', items: { type: 'object', properties: { x: { type: 'integer', default: 1 } } } },
          },
        },
      },
    };
    expect(withSchemaDefaults({ spec: { interval: '5m', items: [{}, { x: 2 }] } }, schema)).toEqual({
      spec: { interval: '5m', ref: { branch: 'main' }, items: [{ x: 1 }, { x: 2 }] },
    });
  });
});
