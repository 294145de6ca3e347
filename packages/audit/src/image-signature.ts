import { ConfigError } from '@baton/errors';
import { IN_TOTO_PAYLOAD_TYPE, signEnvelope } from './dsse.js';
import { type KeylessSignature, type KeylessTrust, verifyCosignV2Signature, verifyKeylessBundle } from './keyless.js';
import type { Signer } from './signing-key.js';
import { type SigstoreBundle, toSigstoreBundle, type VerifiedBundle, verifySigstoreBundle } from './sigstore-bundle.js';
import { IN_TOTO_STATEMENT_TYPE } from './statement.js';
import type { TrustedKeySet } from './trusted-keys.js';

/**
 * The predicate type of a cosign v3 image signature: a DSSE-wrapped in-toto Statement whose subject is the image
 * manifest's digest and whose predicate is empty, in a Sigstore bundle attached to the image as an OCI referrer.
 */
export const COSIGN_SIGN_PREDICATE_TYPE = 'https://sigstore.dev/cosign/sign/v1';

/** The predicate type of SLSA provenance v1, what `cosign attest --type slsaprovenance1` and `pnpm image:build` attach. */
export const SLSA_PROVENANCE_PREDICATE_TYPE = 'https://slsa.dev/provenance/v1';

const DIGEST = /^sha256:[0-9a-f]{64}$/;

/**
 * The statement an image signature signs: `name` (the repository, informative only: a mirrored image keeps its
 * signature) at the manifest digest `digest` (`sha256:<hex>`).
 * @throws {RangeError} when `digest` is not a sha256 digest.
 */
export function imageSignatureStatement(name: string, digest: string): Buffer {
  return imageStatement(name, digest, COSIGN_SIGN_PREDICATE_TYPE, {});
}

/** An in-toto Statement v1 about image `name@digest`. @throws {RangeError} when `digest` is not sha256. */
function imageStatement(name: string, digest: string, predicateType: string, predicate: unknown): Buffer {
  if (!DIGEST.test(digest)) throw new RangeError(`not a sha256 digest: ${digest}`);
  return Buffer.from(
    JSON.stringify({
      _type: IN_TOTO_STATEMENT_TYPE,
      subject: [{ name, digest: { sha256: digest.slice('sha256:'.length) } }],
      predicateType,
      predicate,
    }),
  );
}

/**
 * Signs image `name@digest` with `signer` (a key file, a PKCS#11 token or a signer command: the same signers the audit
 * log uses) and returns the Sigstore bundle cosign v3 attaches for `cosign sign --key`.
 */
export function signImage(name: string, digest: string, signer: Signer): Promise<SigstoreBundle> {
  return attestImage(name, digest, COSIGN_SIGN_PREDICATE_TYPE, {}, signer);
}

/**
 * An attestation about image `name@digest` (e.g. SLSA provenance, `https://slsa.dev/provenance/v1`) as the Sigstore
 * bundle `cosign attest --key` attaches: an in-toto Statement with that subject and predicate, signed by `signer`.
 * @throws {RangeError} when `digest` is not a sha256 digest.
 */
export async function attestImage(
  name: string,
  digest: string,
  predicateType: string,
  predicate: unknown,
  signer: Signer,
): Promise<SigstoreBundle> {
  const statement = imageStatement(name, digest, predicateType, predicate);
  return toSigstoreBundle(await signEnvelope(IN_TOTO_PAYLOAD_TYPE, statement, [signer]));
}

/**
 * Verifies that `bundle` is a signature of the image manifest `digest` by a key of `keys`: the DSSE signature, the
 * predicate type, and a subject whose sha256 is the digest (a signature of another image, however valid, is refused).
 * @param where names the signature in messages (`registry/repo@sha256:… signature sha256:…`).
 * @throws {ConfigError} naming `where` and what failed.
 */
export function verifyImageSignature(
  bundle: unknown,
  digest: string,
  keys: TrustedKeySet,
  where: string,
  predicateType: string = COSIGN_SIGN_PREDICATE_TYPE,
): VerifiedBundle {
  const verified = verifySigstoreBundle(bundle, keys, where);
  checkImageStatement(verified.statement, digest, where, predicateType);
  return verified;
}

/**
 * Verifies that `bundle` is a keyless signature of the image manifest `digest` by an identity of `trust`: the
 * certificate, its SCT and log entry against the trusted root, the DSSE signature, the identity, then the statement
 * as {@link verifyImageSignature} checks it.
 * @throws {ConfigError} naming `where` and what failed.
 */
export async function verifyKeylessImageSignature(
  bundle: unknown,
  digest: string,
  trust: KeylessTrust,
  where: string,
  predicateType: string = COSIGN_SIGN_PREDICATE_TYPE,
): Promise<KeylessSignature & { readonly statement: VerifiedBundle['statement'] }> {
  const verified = await verifyKeylessBundle(bundle, trust, where);
  let statement: VerifiedBundle['statement'] & { _type?: string };
  try {
    statement = JSON.parse(verified.payload.toString('utf8'));
  } catch {
    throw new ConfigError(`${where}: the payload is not JSON`);
  }
  if (statement?._type !== IN_TOTO_STATEMENT_TYPE || !Array.isArray(statement.subject))
    throw new ConfigError(`${where}: the payload is not an in-toto Statement v1`);
  checkImageStatement(statement, digest, where, predicateType);
  return { ...verified, statement };
}

/**
 * Verifies a cosign v2 keyless signature of the image manifest `digest` (a layer of its `sha256-<hex>.sig` tag:
 * `payload` and the layer's `annotations`) by an identity of `trust`, then that the simple-signing payload names
 * that digest.
 * @throws {ConfigError} naming `where` and what failed.
 */
export async function verifyCosignV2ImageSignature(
  payload: Buffer,
  annotations: Readonly<Record<string, string>>,
  digest: string,
  trust: KeylessTrust,
  where: string,
): Promise<KeylessSignature> {
  const verified = await verifyCosignV2Signature(payload, annotations, trust, where);
  let simple: { critical?: { type?: string; image?: { 'docker-manifest-digest'?: string } } };
  try {
    simple = JSON.parse(payload.toString('utf8'));
  } catch {
    throw new ConfigError(`${where}: the payload is not JSON`);
  }
  if (simple?.critical?.type !== 'cosign container image signature')
    throw new ConfigError(`${where}: the payload is not a cosign container image signature`);
  const signed = simple.critical.image?.['docker-manifest-digest'];
  if (signed !== digest)
    throw new ConfigError(`${where}: signs ${signed ?? 'no digest'}, not ${digest}: a signature of another image`);
  return verified;
}

/**
 * An image signature's (or attestation's) statement: the predicate type expected (cosign's sign predicate for a
 * signature), and a subject whose sha256 is `digest`.
 */
function checkImageStatement(
  statement: VerifiedBundle['statement'],
  digest: string,
  where: string,
  predicateType: string,
): void {
  if (statement.predicateType !== predicateType)
    throw new ConfigError(
      `${where}: a ${statement.predicateType} statement, not ${predicateType === COSIGN_SIGN_PREDICATE_TYPE ? 'an image signature' : 'an attestation'} (${predicateType})`,
    );
  const hex = digest.slice('sha256:'.length);
  const subjects = statement.subject as { digest?: { sha256?: string } }[];
  if (!subjects.some((s) => s?.digest?.sha256 === hex)) {
    const signed = subjects.map((s) => (s?.digest?.sha256 ? `sha256:${s.digest.sha256}` : '?')).join(', ');
    throw new ConfigError(`${where}: signs ${signed || 'no digest'}, not ${digest}: a signature of another image`);
  }
}
