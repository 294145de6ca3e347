import '@abraham/reflection';
import { createHash, createPrivateKey, sign, webcrypto } from 'node:crypto';
import {
  IN_TOTO_PAYLOAD_TYPE,
  imageSignatureStatement,
  preAuthEncoding,
  SIGSTORE_BUNDLE_MEDIA_TYPE,
} from '@baton/audit';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

// A private Sigstore root for the tests: a CA in Fulcio's place, a CT log key and a transparency log key in Rekor's.
// It issues in process what those services would (a short-lived code-signing certificate naming an OIDC identity, its
// embedded SCT, a dsse log entry with an inclusion promise and a one-leaf inclusion proof), so keyless verification
// is tested end to end without the public Sigstore, which this machine cannot reach. The verifier is the real one.

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const OID_FULCIO_ISSUER_V1 = '1.3.6.1.4.1.57264.1.1';
const OID_FULCIO_ISSUER_V2 = '1.3.6.1.4.1.57264.1.8';
const OID_SCT_LIST = '1.3.6.1.4.1.11129.2.4.2';
const OID_CODE_SIGNING = '1.3.6.1.5.5.7.3.3';
/** The media type of a Sigstore trusted root (what `cosign verify --trusted-root` reads). */
export const TRUSTED_ROOT_MEDIA_TYPE = 'application/vnd.dev.sigstore.trustedroot+json;version=0.1';

/** The OIDC identity a keyless certificate names: the token's issuer and subject (a workflow URI or an email). */
export interface KeylessSigner {
  readonly issuer: string;
  /** `https://…` becomes a URI SAN, anything else an email SAN, as Fulcio does. */
  readonly subject: string;
}

/** How {@link LocalSigstore.signImage} may go wrong on purpose, for refusal tests. */
export interface KeylessSignOptions {
  /** Leave the SCT out of the certificate. */
  readonly noSct?: boolean;
  /** Log the entry this many seconds after the certificate expired (a signature made after the key's 10 minutes). */
  readonly loggedAfterExpiry?: number;
  /** Sign the log entry with a key the root does not list. */
  readonly rogueLog?: boolean;
}

/** A private Sigstore instance: its trusted root and what it signs. */
export interface LocalSigstore {
  /** The Sigstore trusted root (JSON) listing this CA, CT log and transparency log. */
  readonly trustedRoot: Record<string, unknown>;
  /** A cosign v3 keyless image signature bundle of `name@digest`, by `signer`. */
  signImage(name: string, digest: string, signer: KeylessSigner, options?: KeylessSignOptions): Promise<unknown>;
  /**
   * A cosign v2 keyless image signature of `name@digest`: the simple-signing payload (the layer of the image's
   * `sha256-<hex>.sig` tag) and the layer's annotations (signature, certificate, chain, Rekor bundle).
   */
  signImageCosignV2(
    name: string,
    digest: string,
    signer: KeylessSigner,
    options?: KeylessSignOptions,
  ): Promise<{ payload: Buffer; annotations: Record<string, string> }>;
}

interface LogKey {
  readonly keys: webcrypto.CryptoKeyPair;
  readonly spki: Buffer;
  readonly logId: Buffer;
}

async function logKey(): Promise<LogKey> {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const spki = Buffer.from(await webcrypto.subtle.exportKey('spki', keys.publicKey));
  return { keys, spki, logId: createHash('sha256').update(spki).digest() };
}

/** DER ECDSA signature (what Rekor, CT logs and checkpoints carry), from a WebCrypto key. */
async function derSign(key: webcrypto.CryptoKey, data: Buffer): Promise<Buffer> {
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return sign('sha256', data, createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }));
}

const u16 = (n: number) => Buffer.from([n >> 8, n & 0xff]);
const u24 = (n: number) => Buffer.from([(n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff]);
const u64 = (n: bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(n);
  return b;
};

/** DER of an OCTET STRING wrapping `inner` (an extension value). */
function octetString(inner: Buffer): Buffer {
  const len = inner.length;
  const head =
    len < 0x80
      ? Buffer.from([0x04, len])
      : len < 0x100
        ? Buffer.from([0x04, 0x81, len])
        : Buffer.from([0x04, 0x82, len >> 8, len & 0xff]);
  return Buffer.concat([head, inner]);
}

/** DER of a UTF8String. */
function utf8String(s: string): Buffer {
  const v = Buffer.from(s, 'utf8');
  return Buffer.concat([Buffer.from([0x0c, v.length]), v]);
}

/** The TBSCertificate's DER of a certificate (the first element of its outer SEQUENCE). */
function tbsOf(certDer: Buffer): Buffer {
  // Outer SEQUENCE header, then the TBS SEQUENCE: read its length to slice it out.
  const outerHeader = certDer[1]! & 0x80 ? 2 + (certDer[1]! & 0x7f) : 2;
  const at = outerHeader;
  const lenByte = certDer[at + 1]!;
  const lenBytes = lenByte & 0x80 ? lenByte & 0x7f : 0;
  const len = lenBytes ? certDer.readUIntBE(at + 2, lenBytes) : lenByte;
  return certDer.subarray(at, at + 2 + lenBytes + len);
}

const b64 = (b: Buffer) => b.toString('base64');

interface Authority {
  readonly ca: x509.X509Certificate;
  readonly caKeys: webcrypto.CryptoKeyPair;
  readonly caSpki: Buffer;
  readonly ctlog: LogKey;
  readonly tlog: LogKey;
  /** A log key the root does not list, for entries that must not verify. */
  readonly rogue: LogKey;
}

const TLOG_ORIGIN = 'rekor.local-sigstore.test';

/** Makes a private Sigstore instance (a few milliseconds), valid from an hour before `now`. */
export async function createLocalSigstore(options: { now?: Date } = {}): Promise<LocalSigstore> {
  const start = new Date((options.now ?? new Date()).getTime() - 3_600_000);
  const caKeys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: 'O=baton-testenv, CN=local-sigstore-ca',
    notBefore: start,
    notAfter: new Date(start.getTime() + 30 * 86_400_000),
    keys: caKeys,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, 1, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const caSpki = Buffer.from(await webcrypto.subtle.exportKey('spki', caKeys.publicKey));
  const authority: Authority = {
    ca,
    caKeys,
    caSpki,
    ctlog: await logKey(),
    tlog: await logKey(),
    rogue: await logKey(),
  };
  const instance = (log: LogKey, baseUrl: string) => ({
    baseUrl,
    hashAlgorithm: 'SHA2_256',
    publicKey: {
      rawBytes: b64(log.spki),
      keyDetails: 'PKIX_ECDSA_P256_SHA_256',
      validFor: { start: start.toISOString() },
    },
    logId: { keyId: b64(log.logId) },
  });
  const trustedRoot = {
    mediaType: TRUSTED_ROOT_MEDIA_TYPE,
    tlogs: [instance(authority.tlog, `https://${TLOG_ORIGIN}`)],
    certificateAuthorities: [
      {
        subject: { organization: 'baton-testenv', commonName: 'local-sigstore-ca' },
        uri: 'https://fulcio.local-sigstore.test',
        certChain: { certificates: [{ rawBytes: b64(Buffer.from(ca.rawData)) }] },
        validFor: { start: start.toISOString() },
      },
    ],
    ctlogs: [instance(authority.ctlog, 'https://ctfe.local-sigstore.test')],
    timestampAuthorities: [],
  };
  let serial = 1;
  return {
    trustedRoot,
    async signImage(name, digest, signer, opts = {}) {
      const { cert, keys } = await issueCertificate(authority, serial++, signer, opts);
      // The signature: a DSSE envelope of the cosign v3 sign statement, by the ephemeral key.
      const payload = imageSignatureStatement(name, digest);
      const sig = await derSign(keys.privateKey, preAuthEncoding(IN_TOTO_PAYLOAD_TYPE, payload));
      const envelope = {
        payload: b64(payload),
        payloadType: IN_TOTO_PAYLOAD_TYPE,
        signatures: [{ sig: b64(sig), keyid: '' }],
      };
      const body = {
        apiVersion: '0.0.1',
        kind: 'dsse',
        spec: {
          envelopeHash: { algorithm: 'sha256', value: sha256Hex(JSON.stringify(envelope)) },
          payloadHash: { algorithm: 'sha256', value: sha256Hex(payload) },
          signatures: [{ signature: b64(sig), verifier: b64(Buffer.from(cert.toString('pem'))) }],
        },
      };
      const entry = await logEntry(authority, body, loggedAt(cert, opts), opts);
      return {
        mediaType: SIGSTORE_BUNDLE_MEDIA_TYPE,
        verificationMaterial: {
          certificate: { rawBytes: b64(Buffer.from(cert.rawData)) },
          tlogEntries: [entry],
        },
        dsseEnvelope: envelope,
      };
    },
    async signImageCosignV2(name, digest, signer, opts = {}) {
      const { cert, keys } = await issueCertificate(authority, serial++, signer, opts);
      // cosign v2: the simple-signing payload, signed as a blob; the Rekor entry is a hashedrekord of it.
      const payload = Buffer.from(
        JSON.stringify({
          critical: {
            identity: { 'docker-reference': name },
            image: { 'docker-manifest-digest': digest },
            type: 'cosign container image signature',
          },
          optional: null,
        }),
      );
      const sig = await derSign(keys.privateKey, payload);
      const body = {
        apiVersion: '0.0.1',
        kind: 'hashedrekord',
        spec: {
          data: { hash: { algorithm: 'sha256', value: sha256Hex(payload) } },
          signature: { content: b64(sig), publicKey: { content: b64(Buffer.from(cert.toString('pem'))) } },
        },
      };
      const entry = await logEntry(authority, body, loggedAt(cert, opts), opts);
      const rekorBundle = {
        SignedEntryTimestamp: (entry.inclusionPromise as { signedEntryTimestamp: string }).signedEntryTimestamp,
        Payload: {
          body: entry.canonicalizedBody,
          integratedTime: Number(entry.integratedTime),
          logIndex: 0,
          logID: authority.tlog.logId.toString('hex'),
        },
      };
      return {
        payload,
        annotations: {
          'dev.cosignproject.cosign/signature': b64(sig),
          'dev.sigstore.cosign/certificate': cert.toString('pem'),
          'dev.sigstore.cosign/chain': authority.ca.toString('pem'),
          'dev.sigstore.cosign/bundle': JSON.stringify(rekorBundle),
        },
      };
    },
  };
}

const sha256Hex = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/** When the log records the entry: now, or after the certificate expired when the test asks. */
function loggedAt(cert: x509.X509Certificate, opts: KeylessSignOptions): number {
  return opts.loggedAfterExpiry ? cert.notAfter.getTime() + opts.loggedAfterExpiry * 1000 : Date.now();
}

/** Fulcio's part: an ephemeral key, a 10-minute certificate naming the identity, with a CT log's SCT embedded. */
async function issueCertificate(
  authority: Authority,
  serial: number,
  signer: KeylessSigner,
  opts: KeylessSignOptions,
): Promise<{ cert: x509.X509Certificate; keys: webcrypto.CryptoKeyPair }> {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const notBefore = new Date(Date.now() - 60_000);
  const san: x509.JsonGeneralName = signer.subject.startsWith('https://')
    ? { type: 'url', value: signer.subject }
    : { type: 'email', value: signer.subject };
  const extensions: x509.Extension[] = [
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
    new x509.ExtendedKeyUsageExtension([OID_CODE_SIGNING]),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    await x509.AuthorityKeyIdentifierExtension.create(authority.ca),
    new x509.SubjectAlternativeNameExtension([san], true),
    new x509.Extension(OID_FULCIO_ISSUER_V1, false, Buffer.from(signer.issuer, 'ascii')),
    new x509.Extension(OID_FULCIO_ISSUER_V2, false, utf8String(signer.issuer)),
  ];
  const base = {
    serialNumber: serial.toString(16).padStart(2, '0'),
    subject: '',
    issuer: authority.ca.subject,
    notBefore,
    notAfter: new Date(notBefore.getTime() + 600_000),
    publicKey: keys.publicKey,
    signingKey: authority.caKeys.privateKey,
    signingAlgorithm: ALG,
  };
  const precert = await x509.X509CertificateGenerator.create({ ...base, extensions });
  if (opts.noSct) return { cert: precert, keys };
  // RFC 6962 3.2: the log signs the precertificate's TBS (the certificate without the SCT extension).
  const tbs = tbsOf(Buffer.from(precert.rawData));
  const timestamp = u64(BigInt(notBefore.getTime() + 1000));
  const signed = Buffer.concat([
    Buffer.from([0, 0]),
    timestamp,
    u16(1),
    createHash('sha256').update(authority.caSpki).digest(),
    u24(tbs.length),
    tbs,
    u16(0),
  ]);
  const sig = await derSign(authority.ctlog.keys.privateKey, signed);
  const sct = Buffer.concat([
    Buffer.from([0]),
    authority.ctlog.logId,
    timestamp,
    u16(0),
    Buffer.from([4, 3]),
    u16(sig.length),
    sig,
  ]);
  const list = Buffer.concat([u16(sct.length + 2), u16(sct.length), sct]);
  const sctExt = new x509.Extension(OID_SCT_LIST, false, octetString(list));
  return { cert: await x509.X509CertificateGenerator.create({ ...base, extensions: [...extensions, sctExt] }), keys };
}

/** Rekor v1's part: the entry (dsse, hashedrekord), its signed entry timestamp, its inclusion in a one-leaf tree. */
async function logEntry(
  authority: Authority,
  entry: { readonly apiVersion: string; readonly kind: string; readonly spec: unknown },
  loggedAt: number,
  opts: KeylessSignOptions,
): Promise<Record<string, unknown>> {
  const body = Buffer.from(JSON.stringify(entry));
  const { tlog } = authority;
  const signingKey = (opts.rogueLog ? authority.rogue : tlog).keys.privateKey;
  const integratedTime = Math.floor(loggedAt / 1000);
  // The SET signs the canonical JSON of the entry (keys sorted).
  const setPayload = `{"body":"${b64(body)}","integratedTime":${integratedTime},"logID":"${tlog.logId.toString('hex')}","logIndex":0}`;
  const set = await derSign(signingKey, Buffer.from(setPayload));
  const root = createHash('sha256')
    .update(Buffer.concat([Buffer.from([0]), body]))
    .digest();
  const note = `${TLOG_ORIGIN}\n1\n${b64(root)}\n`;
  const noteSig = await derSign(signingKey, Buffer.from(note));
  const checkpoint = `${note}\n\u2014 ${TLOG_ORIGIN} ${b64(Buffer.concat([tlog.logId.subarray(0, 4), noteSig]))}\n`;
  return {
    logIndex: '0',
    logId: { keyId: b64(tlog.logId) },
    kindVersion: { kind: entry.kind, version: entry.apiVersion },
    integratedTime: String(integratedTime),
    inclusionPromise: { signedEntryTimestamp: b64(set) },
    inclusionProof: {
      logIndex: '0',
      rootHash: b64(root),
      treeSize: '1',
      hashes: [],
      checkpoint: { envelope: checkpoint },
    },
    canonicalizedBody: b64(body),
  };
}
