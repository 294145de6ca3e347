// The confinement policy's cases, each evaluated as CEL against an admission request the way the API server would.
// Over 400 lines on purpose: every case runs through the one harness above them (admit, stored, asRequest and the CEL
// environment), which a split would have to export from a source file that ships.
import { Environment } from '@marcbachmann/cel-js';
import { describe, expect, it } from 'vitest';
import { type ConfinedObject, type Confinement, closedPolicy, planConfinement } from './confinement-policy.js';
import type { KubeObject } from './kube-object.js';

const USER = 'system:serviceaccount:sys:baton-bootstrap-r1';

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

function service(clusterIP: string) {
  return {
    group: '',
    resource: 'services',
    expected: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'src', namespace: 'sys' },
      spec: { clusterIP, clusterIPs: [clusterIP], type: 'ClusterIP', ports: [{ port: 80, protocol: 'TCP' }] },
    },
  };
}

function plan(objects: readonly ConfinedObject[] = [role, secret]) {
  return planConfinement({
    name: 'baton-bootstrap-r1',
    runId: 'r1',
    username: USER,
    planDigest: 'sha256:abc',
    fieldManager: 'baton-bootstrap',
    objects,
  });
}

// The apiserver's CEL: aggregate literals must be homogeneous (as `homogeneousAggregateLiterals` checks here), and
// `request`, `object`, `oldObject` and `variables` are dynamic.
const cel = new Environment({ unlistedVariablesAreDyn: true });

interface PolicySpec {
  readonly failurePolicy: string;
  readonly matchConditions: readonly { readonly expression: string }[];
  readonly variables?: readonly { readonly name: string; readonly expression: string }[];
  readonly validations: readonly { readonly expression: string; message?: string; messageExpression?: string }[];
}

/** What an admission request carries into a policy's CEL, as the apiserver builds it. */
interface Request {
  readonly operation?: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  readonly username?: string;
  readonly group: string;
  readonly resource: string;
  readonly subResource?: string;
  readonly namespace?: string;
  readonly name: string;
  /** `null` for DELETE and CONNECT. */
  readonly object: KubeObject | null;
  /** `request.options.fieldManager`; absent when `null`. @default 'baton-bootstrap' */
  readonly fieldManager?: string | null;
}

/** What the policy decides: not matched (it does not apply), or the messages of the validations that denied. */
type Decision = { readonly matched: false } | { readonly matched: true; readonly denied: readonly string[] };

/**
 * Evaluates a ValidatingAdmissionPolicy as the apiserver does: match conditions, then variables, then every
 * validation; a validation that is false or fails to evaluate denies (failurePolicy Fail).
 */
function admit(policy: KubeObject, r: Request): Decision {
  const spec = policy.spec as PolicySpec;
  const fieldManager = r.fieldManager === undefined ? 'baton-bootstrap' : r.fieldManager;
  const request = {
    operation: r.operation ?? 'CREATE',
    userInfo: { username: r.username ?? USER, groups: ['system:serviceaccounts', 'system:authenticated'] },
    resource: { group: r.group, version: 'v1', resource: r.resource },
    ...(r.subResource ? { subResource: r.subResource } : {}),
    ...(r.namespace ? { namespace: r.namespace } : {}),
    name: r.name,
    ...(fieldManager !== null ? { options: { fieldManager } } : {}),
  };
  const ctx: Record<string, unknown> = { request, object: r.object, oldObject: null };
  if (!spec.matchConditions.every((m) => cel.evaluate(m.expression, ctx) === true)) return { matched: false };
  const variables: Record<string, unknown> = {};
  for (const v of spec.variables ?? []) variables[v.name] = cel.evaluate(v.expression, { ...ctx, variables });
  const denied: string[] = [];
  for (const v of spec.validations) {
    const scope = { ...ctx, variables };
    let isAllowed: boolean;
    try {
      isAllowed = cel.evaluate(v.expression, scope) === true;
    } catch (err) {
      denied.push(`evaluation failed: ${(err as Error).message.split('\n')[0]}`);
      continue;
    }
    if (!isAllowed) denied.push(v.messageExpression ? String(cel.evaluate(v.messageExpression, scope)) : v.message!);
  }
  return { matched: true, denied };
}

/** An object a test changes before the apiserver would admit it. */
type Editable = { metadata: Record<string, unknown>; [key: string]: unknown };

/** An object as the apiserver admits it: the manifest with the fields the server sets in metadata. */
function stored(o: KubeObject, change: (o: Editable) => void = () => {}): KubeObject {
  const copy = structuredClone(o) as unknown as Editable;
  Object.assign(copy.metadata, {
    uid: '0b7e5f3c-1111-2222-3333-444455556666',
    resourceVersion: '42',
    creationTimestamp: '2026-01-01T00:00:00Z',
    managedFields: [{ manager: 'baton-bootstrap', operation: 'Apply', apiVersion: o.apiVersion }],
  });
  change(copy);
  return copy as unknown as KubeObject;
}

function asRequest(o: ConfinedObject, object: KubeObject | null = stored(o.expected)): Request {
  return {
    group: o.group,
    resource: o.resource,
    ...(o.expected.metadata.namespace ? { namespace: o.expected.metadata.namespace } : {}),
    name: o.expected.metadata.name,
    object,
  };
}

function expectAllowed(c: Confinement, r: Request) {
  expect(admit(c.policy, r)).toEqual({ matched: true, denied: [] });
}

function expectDenied(c: Confinement, r: Request, why: RegExp) {
  const d = admit(c.policy, r);
  expect(d.matched).toBe(true);
  const denied = d.matched ? d.denied : [];
  expect(denied.length).toBeGreaterThan(0);
  expect(denied.join('\n')).toMatch(why);
  for (const m of denied) expect(m).not.toMatch(/^evaluation failed/);
  for (const m of denied) expect(m).toContain('(plan sha256:abc)');
}

describe('planConfinement, evaluated as CEL against admission requests', () => {
  const c = plan();

  it('type-checks every expression as the apiserver would compile it', () => {
    const spec = c.policy.spec as PolicySpec;
    const all = [
      ...spec.matchConditions.map((m) => m.expression),
      ...(spec.variables ?? []).map((v) => v.expression),
      ...spec.validations.flatMap((v) => [v.expression, ...(v.messageExpression ? [v.messageExpression] : [])]),
    ];
    for (const e of all) expect(cel.check(e), e).toMatchObject({ valid: true });
    expect(spec.failurePolicy).toBe('Fail');
    expect(c.binding).toMatchObject({ spec: { policyName: 'baton-bootstrap-r1', validationActions: ['Deny'] } });
  });

  it('applies to the run identity only', () => {
    expect(admit(c.policy, { ...asRequest(role), username: 'system:serviceaccount:sys:other' })).toEqual({
      matched: false,
    });
    expect(admit(c.policy, { ...asRequest(role), username: 'admin' })).toEqual({ matched: false });
  });

  it('admits the planned objects, created or applied, as the server stores them', () => {
    expectAllowed(c, asRequest(role));
    expectAllowed(c, { ...asRequest(role), operation: 'UPDATE' });
    expectAllowed(c, asRequest(secret));
  });

  it('denies an object of another name or namespace, naming the target and the plan', () => {
    const renamed = stored(role.expected, (o) => {
      o.metadata.name = 'ctl-2';
    });
    expectDenied(
      c,
      { ...asRequest(role, renamed), name: 'ctl-2' },
      /not in the plan: .*rbac.authorization.k8s.io\/clusterroles\/\/ctl-2/,
    );
    const moved = stored(secret.expected, (o) => {
      o.metadata.namespace = 'other';
    });
    expectDenied(c, { ...asRequest(secret, moved), namespace: 'other' }, /not in the plan: .*\/secrets\/other\/pull/);
    expectDenied(
      c,
      { ...asRequest(role), group: '', resource: 'configmaps' },
      /not in the plan: .*\/configmaps\/\/ctl/,
    );
  });

  it('denies changed content, labels, annotations and owner references', () => {
    const wider = stored(role.expected, (o) => {
      o.rules = [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }];
    });
    expectDenied(c, asRequest(role, wider), /ClusterRole\/ctl: rules differs from the plan/);
    const aggregated = stored(role.expected, (o) => {
      Object.assign(o, { aggregationRule: { clusterRoleSelectors: [{ matchLabels: { x: 'y' } }] } });
    });
    expectDenied(c, asRequest(role, aggregated), /the set of top-level fields differs/);
    const labelled = stored(role.expected, (o) => {
      o.metadata.labels = { app: 'ctl', 'rbac.example/aggregate-to-admin': 'true' };
    });
    expectDenied(c, asRequest(role, labelled), /metadata.labels differs/);
    const unlabelled = stored(role.expected, (o) => {
      delete o.metadata.labels;
    });
    expectDenied(c, asRequest(role, unlabelled), /metadata.labels differs/);
    const annotated = stored(role.expected, (o) => {
      o.metadata.annotations = { note: 'x' };
    });
    expectDenied(c, asRequest(role, annotated), /metadata.annotations differs/);
    const owned = stored(role.expected, (o) => {
      o.metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'Namespace', name: 'sys', uid: 'u' }];
    });
    expectDenied(c, asRequest(role, owned), /metadata.ownerReferences differs/);
  });

  it('denies any field manager but the plan’s, and a request that names none', () => {
    expectDenied(
      c,
      { ...asRequest(role), fieldManager: 'kubectl' },
      /the only field manager allowed is baton-bootstrap/,
    );
    expectDenied(c, { ...asRequest(role), fieldManager: null }, /the only field manager allowed is baton-bootstrap/);
  });

  it('denies delete, connect and subresources of a planned object', () => {
    expectDenied(c, { ...asRequest(role, null), operation: 'DELETE' }, /only create or apply .* this was .*DELETE/);
    expectDenied(c, { ...asRequest(secret, null), operation: 'DELETE' }, /this was .*DELETE/);
    expectDenied(c, { ...asRequest(role), operation: 'CONNECT' }, /this was .*CONNECT/);
    expectDenied(c, { ...asRequest(role), operation: 'UPDATE', subResource: 'status' }, /writes to subresources/);
  });

  it('pins a Secret by type and keys, never by value', () => {
    const otherValues = stored(secret.expected, (o) => {
      o.data = { password: 'YXR0YWNrZXI=', username: 'cm9vdA==' };
    });
    // The policy cannot see values (they would be readable in it): a changed value is admitted here and must be
    // caught after the push by comparing digests.
    expectAllowed(c, asRequest(secret, otherValues));
    const extraKey = stored(secret.expected, (o) => {
      o.data = { ...(o.data as object), token: 'eA==' };
    });
    expectDenied(c, asRequest(secret, extraKey), /Secret\/sys\/pull: the set of keys differs/);
    const missingKey = stored(secret.expected, (o) => {
      o.data = { password: 'c2VjcmV0LXZhbHVl' };
    });
    expectDenied(c, asRequest(secret, missingKey), /the set of keys differs/);
    const retyped = stored(secret.expected, (o) => {
      o.type = 'kubernetes.io/service-account-token';
    });
    expectDenied(c, asRequest(secret, retyped), /Secret\/sys\/pull: type differs/);
    const immutable = stored(secret.expected, (o) => {
      o.immutable = true;
    });
    expectDenied(c, asRequest(secret, immutable), /immutable differs/);
    const withStringData = stored(secret.expected, (o) => {
      o.stringData = { extra: 'x' };
    });
    expectDenied(c, asRequest(secret, withStringData), /stringData differs/);
    const text = JSON.stringify(c.policy);
    expect(text).not.toContain('c2VjcmV0LXZhbHVl');
    expect(text).not.toContain('dXNlcg==');
  });

  it('lets a Service keep any allocated cluster IP but None, and pins None when the plan is headless', () => {
    const svc = service('10.0.0.12');
    const allocated = plan([svc]);
    const at = (ip: string) =>
      stored(svc.expected, (o) => {
        Object.assign(o.spec as object, { clusterIP: ip, clusterIPs: [ip] });
      });
    expectAllowed(allocated, asRequest(svc, at('10.96.0.7')));
    expectAllowed(allocated, asRequest(svc));
    expectDenied(allocated, asRequest(svc, at('None')), /spec.clusterIP \(allocated, not None\) differs/);
    expectDenied(
      allocated,
      asRequest(
        svc,
        stored(svc.expected, (o) => {
          Object.assign(o.spec as object, { clusterIPs: ['10.96.0.7', 'None'] });
        }),
      ),
      /spec.clusterIPs \(allocated, not None\) differs/,
    );
    const nodePort = stored(svc.expected, (o) => {
      Object.assign(o.spec as object, { type: 'NodePort' });
    });
    expectDenied(allocated, asRequest(svc, nodePort), /spec.type differs/);
    const external = stored(svc.expected, (o) => {
      Object.assign(o.spec as object, { externalIPs: ['203.0.113.9'] });
    });
    expectDenied(allocated, asRequest(svc, external), /spec \(fields\) differs/);
    const headlessSvc = service('None');
    const headless = plan([headlessSvc]);
    expectAllowed(headless, asRequest(headlessSvc));
    expectDenied(
      headless,
      asRequest(
        headlessSvc,
        stored(headlessSvc.expected, (o) => {
          Object.assign(o.spec as object, { clusterIP: '10.96.0.7', clusterIPs: ['10.96.0.7'] });
        }),
      ),
      /spec.clusterIP differs/,
    );
  });

  it('compares a large field piece by piece, with no huge literal, and still denies a change deep inside it', () => {
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
    const crd = plan([big]);
    const exprs = (crd.policy.spec as PolicySpec).validations.map((v) => v.expression);
    expect(Math.max(...exprs.map((e) => e.length))).toBeLessThan(42_000);
    expectAllowed(crd, asRequest(big));
    const edited = stored(big.expected, (o) => {
      (o.spec as { versions: { blob?: string }[] }).versions[0]!.blob = `${'x'.repeat(39_999)}y`;
    });
    expectDenied(crd, asRequest(big, edited), /spec.versions\[0\] differs/);
    const extraVersion = stored(big.expected, (o) => {
      (o.spec as { versions: { name: string }[] }).versions.push({ name: 'v3' });
    });
    expectDenied(crd, asRequest(big, extraVersion), /spec.versions \(length\) differs/);
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
        padding: 'y'.repeat(70_000),
      },
    };
    const c = plan([crd, role]);
    expect(c.partlyPinned).toEqual(['CustomResourceDefinition/applications.argoproj.io', 'ClusterRole/huge']);
    expect(c.policyBytes).toBeLessThan(20_000);
    // The rest of such an object is checked by digest after the close; the policy still denies the fields that matter.
    expectAllowed(c, asRequest(crd));
    expectAllowed(c, asRequest(role));
    const denies = (o: typeof crd | typeof role, change: (x: Record<string, unknown>) => void, why: RegExp) =>
      expectDenied(
        c,
        asRequest(
          o,
          stored(o.expected as KubeObject, (x) => change(x as Record<string, unknown>)),
        ),
        why,
      );
    const denySpec = (field: string, value: unknown, why: RegExp) =>
      denies(
        crd,
        (x) => {
          (x.spec as Record<string, unknown>)[field] = value;
        },
        why,
      );
    denySpec('group', 'evil.io', /spec.group differs/);
    denySpec('names', { kind: 'Application', plural: 'apps' }, /spec.names differs/);
    denySpec('scope', 'Cluster', /spec.scope differs/);
    denySpec('conversion', { strategy: 'Webhook' }, /spec.conversion differs/);
    denySpec('preserveUnknownFields', true, /spec \(fields\) differs/);
    denies(
      role,
      (x) => void (x.rules as unknown[]).push({ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }),
      /rules differs/,
    );
    denies(
      role,
      (x) => {
        x.aggregationRule = { clusterRoleSelectors: [{}] };
      },
      /aggregationRule differs/,
    );
    expect(JSON.stringify(c.policy)).not.toContain('xxxxxxxx');
  });

  it('closes to a policy that denies every write of the same identity, planned objects included', () => {
    const closed = closedPolicy(c);
    for (const r of [asRequest(role), asRequest(secret), { ...asRequest(role, null), operation: 'DELETE' as const }])
      expect(admit(closed, r)).toEqual({
        matched: true,
        denied: [
          `baton confinement of ${USER}: the push is complete and this identity may write nothing more (plan sha256:abc)`,
        ],
      });
    expect(admit(closed, { ...asRequest(role), username: 'admin' })).toEqual({ matched: false });
  });
});
