import { createHash } from 'node:crypto';
import { ConfigError } from '@baton/errors';
import type { SignedEntity, TrustMaterial, toSignedEntity, Verifier } from '@sigstore/verify';
import { IN_TOTO_PAYLOAD_TYPE } from './dsse.js';

// Keyless trust: a signature by a short-lived certificate that a Fulcio CA issued to an OIDC identity (a CI workflow,
// a person), logged in a transparency log. What is trusted is an offline Sigstore trusted root (the CAs, CT logs and
// transparency logs) and the identities allowed to sign; verification is sigstore-js's, with its defaults: the
// certificate chains to a CA of the root at the time the log recorded, carries a verified SCT, and the log entry's
// inclusion verifies (promise and proof).

/** The OIDC identity a keyless signature must name: the token's issuer, and its subject exactly or by pattern. */
export interface KeylessIdentity {
  /** e.g. `https://token.actions.githubusercontent.com` (compared exactly). */
  readonly issuer: string;
  /** The certificate's subject (a URI such as a workflow ref, or an email), compared exactly. */
  readonly subject?: string | undefined;
  /** A regular expression the whole subject must match (anchored: `^(?:…)$`, unlike cosign's unanchored flag). */
  readonly subjectRegExp?: string | undefined;
}

// sigstore-js is loaded when a keyless policy is read, not with every command (about 80 ms on a busy machine).
async function loadSigstoreJs() {
  const [bundle, specs, verify] = await Promise.all([
    import('@sigstore/bundle'),
    import('@sigstore/protobuf-specs'),
    import('@sigstore/verify'),
  ]);
  return { ...bundle, TrustedRoot: specs.TrustedRoot, ...verify };
}
let sigstore: ReturnType<typeof loadSigstoreJs> | undefined;
function sigstoreJs(): ReturnType<typeof loadSigstoreJs> {
  sigstore ??= loadSigstoreJs();
  return sigstore;
}

/** A trusted root and the identities it may vouch for. */
export interface KeylessTrust {
  /** Where the trusted root was read (for messages). */
  readonly trustedRoot: string;
  readonly identities: readonly KeylessIdentity[];
  readonly material: TrustMaterial;
}

/** Who signed a bundle that verified keylessly. */
export interface KeylessSignature {
  readonly issuer: string;
  readonly subject: string;
  /** The DSSE payload (an in-toto Statement, unparsed). */
  readonly payload: Buffer;
}

/**
 * Reads a Sigstore trusted root (`trusted_root.json`, as `cosign verify --trusted-root` takes it) for `identities`.
 * @param file where `text` came from, named in every message.
 * @throws {ConfigError} when it is not a trusted root with at least one certificate authority and transparency log.
 */
export async function keylessTrust(
  text: string,
  file: string,
  identities: readonly KeylessIdentity[],
): Promise<KeylessTrust> {
  const { TrustedRoot, toTrustMaterial } = await sigstoreJs();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(
      `${file}: not JSON (${(err as Error).message}); it must be a Sigstore trusted root (trusted_root.json)`,
    );
  }
  const mediaType = (json as { mediaType?: unknown } | null)?.mediaType;
  if (typeof mediaType !== 'string' || !mediaType.startsWith('application/vnd.dev.sigstore.trustedroot'))
    throw new ConfigError(
      `${file}: mediaType is ${JSON.stringify(mediaType)}, not a Sigstore trusted root (application/vnd.dev.sigstore.trustedroot+json); fetch one with \`cosign trusted-root create\` or from the Sigstore TUF repository`,
    );
  let material: TrustMaterial;
  try {
    const root = TrustedRoot.fromJSON(json);
    if (root.certificateAuthorities.length === 0 || root.tlogs.length === 0)
      throw new Error('it lists no certificate authority or no transparency log, so no keyless signature can verify');
    material = toTrustMaterial(root);
  } catch (err) {
    throw new ConfigError(`${file}: not a usable Sigstore trusted root: ${(err as Error).message}`, { cause: err });
  }
  return { trustedRoot: file, identities, material };
}

/** Whether `bundle` is signed by a certificate (keyless) rather than a public key. */
export function isKeylessBundle(bundle: unknown): boolean {
  const material = (bundle as { verificationMaterial?: Record<string, unknown> } | null)?.verificationMaterial;
  return !!material && ('certificate' in material || 'x509CertificateChain' in material);
}

const WHAT_FAILED: Record<string, string> = {
  CERTIFICATE_ERROR: 'its certificate does not verify (its chain to a CA, its validity when logged, its SCT)',
  PUBLIC_KEY_ERROR: 'it names no certificate',
  SIGNATURE_ERROR: 'the signature does not verify with its certificate: the bundle was changed after signing',
  TIMESTAMP_ERROR: 'it has no verified time (no transparency log entry with an inclusion promise)',
  TLOG_ERROR: 'its transparency log entry is missing or does not verify',
  TLOG_BODY_ERROR: 'its transparency log entry is of another signature',
  TLOG_INCLUSION_PROMISE_ERROR: 'its transparency log entry is not signed by a log of the root',
  TLOG_INCLUSION_PROOF_ERROR: 'its transparency log inclusion proof does not verify',
  TLOG_MISSING_INCLUSION_ERROR: 'its transparency log entry has no inclusion promise or proof',
};

/**
 * Verifies a keyless Sigstore bundle against `trust`: the certificate, its SCT, the log entry and the DSSE signature
 * (sigstore-js), then that the certificate names one of the trusted identities.
 * @param where names the bundle in messages.
 * @throws {ConfigError} naming `where` and what failed.
 */
export async function verifyKeylessBundle(
  input: unknown,
  trust: KeylessTrust,
  where: string,
): Promise<KeylessSignature> {
  const { bundleFromJSON, toSignedEntity } = await sigstoreJs();
  let entity: ReturnType<typeof toSignedEntity>;
  let payload: Buffer;
  try {
    const bundle = bundleFromJSON(input);
    if (bundle.content.$case !== 'dsseEnvelope') throw new Error('it signs a message digest, not a DSSE envelope');
    if (bundle.content.dsseEnvelope.payloadType !== IN_TOTO_PAYLOAD_TYPE)
      throw new Error(`the payload is ${bundle.content.dsseEnvelope.payloadType}, not an in-toto Statement`);
    payload = Buffer.from(bundle.content.dsseEnvelope.payload);
    entity = toSignedEntity(bundle);
  } catch (err) {
    throw new ConfigError(`${where}: not a keyless Sigstore bundle of a DSSE envelope: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return { ...(await verifyEntity(entity, trust, where)), payload };
}

/** The content a cosign v2 signature signs: the "simple signing" payload naming the image's manifest digest. */
export const COSIGN_SIMPLE_SIGNING_MEDIA_TYPE = 'application/vnd.dev.cosign.simplesigning.v1+json';

/** The annotations cosign v2 puts on a signature layer of an image's `sha256-<hex>.sig` tag. */
export const COSIGN_ANNOTATIONS = {
  signature: 'dev.cosignproject.cosign/signature',
  certificate: 'dev.sigstore.cosign/certificate',
  chain: 'dev.sigstore.cosign/chain',
  bundle: 'dev.sigstore.cosign/bundle',
} as const;

/**
 * Verifies a cosign v2 keyless signature (a layer of the image's `sha256-<hex>.sig` tag, as cosign before v3 and
 * every image signed with it carry them): the simple-signing `payload` signed by the certificate in the layer's
 * annotations, logged in Rekor (the annotation's signed entry timestamp), against `trust`; then the identity. The
 * caller checks what the payload names.
 * @throws {ConfigError} naming `where` and what failed (a key-signed v2 signature included: it has no certificate).
 */
export async function verifyCosignV2Signature(
  payload: Buffer,
  annotations: Readonly<Record<string, string>>,
  trust: KeylessTrust,
  where: string,
): Promise<KeylessSignature> {
  const { bundleFromJSON, toSignedEntity } = await sigstoreJs();
  const a = COSIGN_ANNOTATIONS;
  if (!annotations[a.certificate])
    throw new ConfigError(
      `${where}: a cosign v2 signature by a key (no certificate); baton verifies key signatures as cosign v3 bundles (cosign sign --key with cosign v3, or pnpm image:build --sign-key)`,
    );
  let entity: ReturnType<typeof toSignedEntity>;
  try {
    const certificates = [annotations[a.certificate] ?? '', annotations[a.chain] ?? '']
      .flatMap((pem) => pemBlocks(pem))
      .map((der) => ({ rawBytes: der.toString('base64') }));
    const rekor = JSON.parse(annotations[a.bundle] ?? 'null') as {
      SignedEntryTimestamp?: string;
      Payload?: { body?: string; integratedTime?: number; logIndex?: number; logID?: string };
    } | null;
    if (!rekor?.SignedEntryTimestamp || !rekor.Payload?.body)
      throw new Error('it carries no Rekor entry (bundle annotation)');
    const body = JSON.parse(Buffer.from(rekor.Payload.body, 'base64').toString('utf8')) as {
      kind?: string;
      apiVersion?: string;
    };
    const bundle = bundleFromJSON({
      mediaType: 'application/vnd.dev.sigstore.bundle+json;version=0.1',
      verificationMaterial: {
        x509CertificateChain: { certificates },
        tlogEntries: [
          {
            logIndex: String(rekor.Payload.logIndex ?? 0),
            logId: { keyId: Buffer.from(rekor.Payload.logID ?? '', 'hex').toString('base64') },
            kindVersion: { kind: body.kind, version: body.apiVersion },
            integratedTime: String(rekor.Payload.integratedTime ?? 0),
            inclusionPromise: { signedEntryTimestamp: rekor.SignedEntryTimestamp },
            canonicalizedBody: rekor.Payload.body,
          },
        ],
      },
      messageSignature: {
        messageDigest: { algorithm: 'SHA2_256', digest: createHash('sha256').update(payload).digest('base64') },
        signature: annotations[a.signature] ?? '',
      },
    });
    entity = toSignedEntity(bundle, payload);
  } catch (err) {
    throw new ConfigError(`${where}: not a cosign v2 keyless signature: ${(err as Error).message}`, { cause: err });
  }
  return { ...(await verifyEntity(entity, trust, where)), payload };
}

/** The DER of each certificate of a PEM text. */
function pemBlocks(pem: string): Buffer[] {
  return [...pem.matchAll(/-----BEGIN CERTIFICATE-----([^-]+)-----END CERTIFICATE-----/g)].map((m) =>
    Buffer.from(m[1]!.replace(/\s+/g, ''), 'base64'),
  );
}

/** sigstore-js's verification of `entity` against the trusted root, then the trusted identities. */
async function verifyEntity(
  entity: SignedEntity,
  trust: KeylessTrust,
  where: string,
): Promise<{ issuer: string; subject: string }> {
  const { VerificationError, Verifier } = await sigstoreJs();
  let signer: ReturnType<Verifier['verify']>;
  try {
    signer = new Verifier(trust.material).verify(entity);
  } catch (err) {
    if (!(err instanceof VerificationError)) throw err;
    const what = WHAT_FAILED[err.code] ?? err.code;
    const detail = (err.cause as Error | undefined)?.message;
    throw new ConfigError(
      `${where}: ${what}: ${err.message}${detail ? `: ${detail}` : ''}; checked against the trusted root ${trust.trustedRoot}`,
      { cause: err },
    );
  }
  const issuer = signer.identity?.extensions?.issuer ?? '';
  const subject = signer.identity?.subjectAlternativeName ?? '';
  if (!trust.identities.some((id) => identityMatches(id, issuer, subject)))
    throw new ConfigError(
      `${where}: signed by ${subject || 'no subject'} (issuer ${issuer || 'none'}), which no trusted identity matches (${trust.identities.map(describeIdentity).join('; ')})`,
    );
  return { issuer, subject };
}

function identityMatches(id: KeylessIdentity, issuer: string, subject: string): boolean {
  if (id.issuer !== issuer) return false;
  if (id.subject !== undefined) return id.subject === subject;
  return id.subjectRegExp !== undefined && new RegExp(`^(?:${id.subjectRegExp})$`, 'u').test(subject);
}

/** `subject <s> from <issuer>`, as messages and `baton plan` show a trusted identity. */
export function describeIdentity(id: KeylessIdentity): string {
  const who = id.subject !== undefined ? id.subject : `/${id.subjectRegExp}/`;
  return `${who} from ${id.issuer}`;
}
