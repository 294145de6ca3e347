import { fileURLToPath } from 'node:url';
import { hasWildcard } from '@baton/kube';
import { describe, expect, it } from 'vitest';
import { loadHandoffPlan } from './handoff-plan.js';
import { previewHandoff } from './preview.js';

const fixture = fileURLToPath(new URL('../../../test/fixtures/handoff/plan.yaml', import.meta.url));

describe('previewHandoff', () => {
  it('shows the objects, the digest, the rules and the confinement of a plan without a cluster', () => {
    const p = previewHandoff(loadHandoffPlan(fixture));
    expect(p.objects).toContain('Deployment/gitops-system/gitops-controller');
    expect(p.planDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(p.rules.length).toBeGreaterThan(0);
    expect(hasWildcard(p.rules)).toBe(false);
    expect(p.confinement.allowed).toEqual(p.objects);
    expect(p.confinement.subject).toBe('system:serviceaccount:baton-system:baton-bootstrap-<run-id>');
    expect(p.confinement.fieldManager).toBe('baton-bootstrap');
    expect(p.confinement.validationCount).toBeGreaterThan(p.objects.length);
  });
});
