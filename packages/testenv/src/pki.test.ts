import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createClusterPki } from './pki.js';

describe('createClusterPki', () => {
  it('issues certificates signed by the cluster CA, with the identities the control plane relies on', async () => {
    const pki = await createClusterPki({ now: new Date('2026-01-01T00:00:00Z'), days: 2 });
    const ca = new X509Certificate(pki.ca.certPem);
    expect(ca.ca).toBe(true);
    const admin = new X509Certificate(pki.admin.certPem);
    expect(admin.verify(ca.publicKey)).toBe(true);
    expect(admin.subject).toContain('O=system:masters');
    expect(new X509Certificate(pki.controllerManager.certPem).subject).toContain('CN=system:kube-controller-manager');
    expect(new X509Certificate(pki.scheduler.certPem).subject).toContain('CN=system:kube-scheduler');
    const serving = new X509Certificate(pki.apiserver.certPem);
    expect(serving.verify(ca.publicKey)).toBe(true);
    expect(serving.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(serving.checkHost('kubernetes.default.svc')).toBe('kubernetes.default.svc');
    expect(new Date(serving.validTo).getTime() - new Date(serving.validFrom).getTime()).toBe(2 * 86_400_000);
    // A second PKI is unrelated: clusters must not trust each other's clients.
    const other = await createClusterPki();
    expect(admin.verify(new X509Certificate(other.ca.certPem).publicKey)).toBe(false);
  });
});
