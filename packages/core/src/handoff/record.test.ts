import * as k8s from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { caFingerprint } from './record.js';

// The audit record's cluster CA: a kubeconfig that names no CA trusts the system store, and the record must not
// carry a hash of nothing (sha256:e3b0c4…, the digest of empty input) as if it were a certificate's.
const kcWith = (cluster: Partial<k8s.Cluster>) => {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://example.test', skipTLSVerify: false, ...cluster }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
};

describe('caFingerprint', () => {
  it('is absent when the kubeconfig names no CA (system trust store)', () => {
    expect(caFingerprint({ caData: undefined, kc: kcWith({}) })).toEqual({});
  });

  it('is the SHA-256 of the certificate DER when the kubeconfig carries one', () => {
    const der = Buffer.from('not really a certificate, but DER bytes all the same');
    const pem = `-----BEGIN CERTIFICATE-----\n${der.toString('base64')}\n-----END CERTIFICATE-----\n`;
    const r = caFingerprint({ caData: Buffer.from(pem).toString('base64'), kc: kcWith({}) });
    expect(r.caFingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(r.caFingerprint).not.toBe(`sha256:${'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'}`);
  });
});
