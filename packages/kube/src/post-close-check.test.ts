import { describe, expect, it } from 'vitest';
import type { KubeObject } from './kube-object.js';
import { diffFromPlan } from './post-close-check.js';

const secret = (data: Record<string, string>, extra: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'baton-pull-credential', namespace: 'baton-system', labels: { app: 'baton' } },
  type: 'Opaque',
  data,
  ...extra,
});

const deployment = (replicas: number, annotations: Record<string, string> = {}): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'c', namespace: 'baton-system', labels: { app: 'c' }, annotations },
  spec: { replicas, template: { spec: { containers: [{ name: 'c', image: 'x@sha256:1' }] } } },
});

describe('diffFromPlan (the post-close check of one object)', () => {
  it('accepts a Secret whose values are the planned ones', () => {
    expect(diffFromPlan(secret({ password: 'cGxhbg==' }), secret({ password: 'cGxhbg==' }))).toEqual([]);
  });

  it("names a rewritten Secret value by its key, never the value (the attacker's password)", () => {
    const fields = diffFromPlan(
      secret({ password: 'cGxhbg==', user: 'dQ==' }),
      secret({ password: 'ZXZpbA==', user: 'dQ==' }),
    );
    expect(fields).toEqual(['data[password]']);
    expect(JSON.stringify(fields)).not.toContain('ZXZpbA');
  });

  it('names an added or removed key, a changed type and immutability', () => {
    expect(
      diffFromPlan(secret({ a: 'YQ==' }), secret({ b: 'Yg==' }, { type: 'kubernetes.io/basic-auth', immutable: true })),
    ).toEqual(['type', 'immutable', 'data[a]', 'data[b]']);
  });

  it('reports a missing object as absent', () => {
    expect(diffFromPlan(secret({}), undefined)).toEqual(['absent']);
  });

  it('compares every declared field and ignores what controllers add (a revision annotation, status)', () => {
    const live = { ...deployment(1, { 'deployment.kubernetes.io/revision': '1' }), status: { replicas: 1 } };
    expect(diffFromPlan(deployment(1), live)).toEqual([]);
    expect(diffFromPlan(deployment(1), deployment(3))).toEqual(['spec.replicas']);
    const other = deployment(1);
    (other.spec as { template: { spec: { containers: { image: string }[] } } }).template.spec.containers[0]!.image =
      'evil:1';
    expect(diffFromPlan(deployment(1), other)).toEqual(['spec.template.spec.containers[0].image']);
  });

  it('names a changed label or a list of another length', () => {
    const d = deployment(1);
    const live: KubeObject = { ...d, metadata: { ...d.metadata, labels: { app: 'other' } } };
    (live.spec as { template: { spec: { containers: unknown[] } } }).template.spec.containers.push({ name: 'side' });
    expect(diffFromPlan(deployment(1), live)).toEqual(['metadata.labels.app', 'spec.template.spec.containers']);
  });

  it("leaves a Service's allocated cluster IPs to the allocator, but pins a planned headless Service", () => {
    const svc = (clusterIP: string): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 's', namespace: 'n' },
      spec: { clusterIP, clusterIPs: [clusterIP], ports: [{ port: 80 }] },
    });
    expect(diffFromPlan(svc('10.0.0.1'), svc('10.0.0.9'))).toEqual([]);
    expect(diffFromPlan(svc('None'), svc('10.0.0.9'))).toEqual(['spec.clusterIP', 'spec.clusterIPs[0]']);
  });
});
