import '@abraham/reflection';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

/** A PEM certificate and its PEM (PKCS#8) private key. */
export interface CertKeyPair {
  readonly certPem: string;
  readonly keyPem: string;
}

/** Everything one local control plane needs: a CA, serving and client certificates, ServiceAccount keys. */
export interface ClusterPki {
  readonly ca: CertKeyPair;
  /** Serving certificate of kube-apiserver (127.0.0.1, localhost and the in-cluster names). */
  readonly apiserver: CertKeyPair;
  /** Operator identity: O=system:masters, as kubeadm's admin.conf. */
  readonly admin: CertKeyPair;
  readonly controllerManager: CertKeyPair;
  readonly scheduler: CertKeyPair;
  /** kwok acts as the kubelet of every fake node. */
  readonly kwok: CertKeyPair;
  /** A real node's kubelet (`system:node:<node>` in `system:nodes`: the Node authorizer's identity). */
  readonly kubelet: CertKeyPair;
  /** kube-proxy of a real node (`system:kube-proxy`, bound by the default `system:node-proxier` role). */
  readonly kubeProxy: CertKeyPair;
  /** CoreDNS's identity (`system:coredns`, bound to a role the bed creates as kubeadm does). */
  readonly coredns: CertKeyPair;
  /** The apiserver's identity toward kubelets (`logs`, `exec`), which authenticate and authorize it. */
  readonly apiserverKubeletClient: CertKeyPair;
  /** ServiceAccount token signing key (PKCS#8 PEM) and its public key (SPKI PEM). */
  readonly serviceAccount: { readonly privateKeyPem: string; readonly publicKeyPem: string };
}

function pem(label: string, der: ArrayBuffer): string {
  const b64 = Buffer.from(der)
    .toString('base64')
    .replace(/(.{64})/g, '$1\n');
  return `-----BEGIN ${label}-----\n${b64.trimEnd()}\n-----END ${label}-----\n`;
}

async function keyPair(): Promise<webcrypto.CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
}

async function privatePem(key: webcrypto.CryptoKey): Promise<string> {
  return pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', key));
}

function serial(): string {
  return Buffer.from(webcrypto.getRandomValues(new Uint8Array(16)))
    .toString('hex')
    .replace(/^[89a-f]/, '1');
}

/** The `kubernetes` Service's address in every bed (the first of `--service-cluster-ip-range`). */
export const KUBERNETES_SERVICE_IP = '10.96.0.1';

/**
 * Creates a fresh PKI for one cluster (ECDSA P-256; a few milliseconds). Validity: `days` from `now`. `nodeIp`: the
 * address a real node's bed binds, also in the apiserver's certificate; `nodeName`: the kubelet's identity.
 */
export async function createClusterPki(
  options: { now?: Date; days?: number; nodeIp?: string; nodeName?: string } = {},
): Promise<ClusterPki> {
  const notBefore = new Date((options.now ?? new Date()).getTime() - 60_000);
  const notAfter = new Date(notBefore.getTime() + (options.days ?? 30) * 86_400_000);
  const caKeys = await keyPair();
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: 'CN=baton-testenv-ca',
    notBefore,
    notAfter,
    keys: caKeys,
    signingAlgorithm: alg,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });

  async function issue(
    subject: string,
    usage: 'server' | 'client',
    sans: x509.JsonGeneralNames = [],
  ): Promise<CertKeyPair> {
    const keys = await keyPair();
    const extensions: x509.Extension[] = [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([
        usage === 'server' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth,
      ]),
      await x509.AuthorityKeyIdentifierExtension.create(caCert),
    ];
    if (sans.length) extensions.push(new x509.SubjectAlternativeNameExtension(sans));
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject,
      issuer: caCert.subject,
      notBefore,
      notAfter,
      publicKey: keys.publicKey,
      signingKey: caKeys.privateKey,
      signingAlgorithm: alg,
      extensions,
    });
    return { certPem: cert.toString('pem'), keyPem: await privatePem(keys.privateKey) };
  }

  const sa = await keyPair();
  return {
    ca: { certPem: caCert.toString('pem'), keyPem: await privatePem(caKeys.privateKey) },
    apiserver: await issue('CN=kube-apiserver', 'server', [
      { type: 'ip', value: '127.0.0.1' },
      // In-cluster clients reach the apiserver as the kubernetes Service, host clients at the node address.
      { type: 'ip', value: KUBERNETES_SERVICE_IP },
      ...(options.nodeIp ? [{ type: 'ip' as const, value: options.nodeIp }] : []),
      { type: 'dns', value: 'localhost' },
      { type: 'dns', value: 'kubernetes' },
      { type: 'dns', value: 'kubernetes.default' },
      { type: 'dns', value: 'kubernetes.default.svc' },
      { type: 'dns', value: 'kubernetes.default.svc.cluster.local' },
    ]),
    admin: await issue('CN=baton-admin, O=system:masters', 'client'),
    controllerManager: await issue('CN=system:kube-controller-manager', 'client'),
    scheduler: await issue('CN=system:kube-scheduler', 'client'),
    kwok: await issue('CN=kwok-controller, O=system:masters', 'client'),
    kubelet: await issue(`CN=system:node:${options.nodeName ?? 'node'}, O=system:nodes`, 'client'),
    kubeProxy: await issue('CN=system:kube-proxy', 'client'),
    coredns: await issue('CN=system:coredns', 'client'),
    apiserverKubeletClient: await issue('CN=kube-apiserver-kubelet-client, O=system:masters', 'client'),
    serviceAccount: {
      privateKeyPem: await privatePem(sa.privateKey),
      publicKeyPem: pem('PUBLIC KEY', await webcrypto.subtle.exportKey('spki', sa.publicKey)),
    },
  };
}
