import {
  COSIGN_SIMPLE_SIGNING_MEDIA_TYPE,
  isKeylessBundle,
  type KeylessTrust,
  SIGSTORE_BUNDLE_MEDIA_TYPE,
  type TrustedKeySet,
  verifyCosignV2ImageSignature,
  verifyImageSignature,
  verifyKeylessImageSignature,
} from '@baton/audit';
import { ImageVerifyError } from '@baton/errors';
import { type ImageRef, parseImageRef } from './image-ref.js';
import { type RegistryClient, type RegistryDescriptor, RegistryError } from './registry-client.js';

/** The keys or keyless identities an image must be signed by (one at least), and where they were declared. */
export interface ImageTrustPolicy {
  /** `push.images.trustedKeys (keys/trusted-keys.yaml)` or `profile flux (…/profile.yaml): imageTrust`. */
  readonly source: string;
  readonly keys?: TrustedKeySet;
  readonly keyless?: KeylessTrust;
}

/** An image whose signature verified. */
export interface VerifiedImage {
  /** The reference as the push set writes it. */
  readonly image: string;
  readonly digest: string;
  /** The signature's referrer manifest. */
  readonly signature: string;
  /** The verifier key that signed it (`name+hash+key`), or the keyless identity (`<subject> from <issuer>`). */
  readonly signedBy: string;
}

const SKIP = 'pass --insecure-skip-image-verify to push it unverified (recorded in the audit event)';

/**
 * Verifies each image (in order, each once) against `policy`, reading its signatures from its registry with the
 * operator's network access: it must be pinned by digest, and a cosign v3 signature (a Sigstore bundle referrer)
 * of that digest must verify with a key the policy trusts.
 * @throws {ImageVerifyError} naming the first image that fails and why: pinned by tag, unsigned, signed by a key the
 * policy does not trust, a signature of another digest, or a registry that cannot be read.
 */
export async function verifyImages(
  images: readonly string[],
  policy: ImageTrustPolicy,
  client: RegistryClient,
): Promise<VerifiedImage[]> {
  const verified: VerifiedImage[] = [];
  for (const image of [...new Set(images)]) verified.push(await verifyImage(image, policy, client));
  return verified;
}

async function verifyImage(image: string, policy: ImageTrustPolicy, client: RegistryClient): Promise<VerifiedImage> {
  const refuse = (why: string, cause?: unknown) =>
    new ImageVerifyError(`image ${image}: ${why}`, { details: { image }, ...(cause ? { cause } : {}) });
  const ref = parseImageRef(image);
  if (typeof ref === 'string') throw refuse(`${ref}; ${SKIP}`);
  if (!ref.digest)
    throw refuse(
      `pinned by tag, and ${policy.source} verifies digests: pin it as ${image}@sha256:<digest> (the digest the signature names)`,
    );
  const where = client.baseOf(ref);
  const pinned = { ...ref, digest: ref.digest };
  try {
    const failures: string[] = [];
    const listed = await client.referrers(ref, ref.digest, SIGSTORE_BUNDLE_MEDIA_TYPE);
    for (const d of listed) {
      const signedBy = await verifyReferrer(pinned, d.digest, policy, client, failures);
      if (signedBy) return { image, digest: ref.digest, signature: d.digest, signedBy };
    }
    // cosign before v3 (and every image signed with it) keeps signatures in the `sha256-<hex>.sig` tag instead.
    const v2 = (await client.cosignV2Signatures(ref, ref.digest)).filter(
      (l) => l.mediaType === COSIGN_SIMPLE_SIGNING_MEDIA_TYPE,
    );
    for (const layer of v2) {
      const signedBy = await verifyCosignV2Layer(pinned, layer, policy, client, failures);
      if (signedBy) return { image, digest: ref.digest, signature: layer.digest, signedBy };
    }
    if (listed.length === 0 && v2.length === 0)
      throw refuse(
        `unsigned: ${where} lists no signature of ${ref.digest} (no Sigstore bundle referrer, no cosign ${ref.digest.replace(':', '-')}.sig tag); sign it (cosign sign, pnpm image:build --sign-key) or ${SKIP}`,
      );
    throw refuse(
      `no signature verifies with the ${trusted(policy)} of ${policy.source}: ${failures.join('; ')}; ${SKIP}`,
    );
  } catch (err) {
    if (err instanceof RegistryError)
      throw refuse(
        `cannot read its signatures: ${err.message}; check the operator's network access to ${ref.registry}, or name a mirror that serves it (push.images.mirrors), or ${SKIP}`,
        err,
      );
    throw err;
  }
}

/** Who signed the bundle referrer `digest`, or undefined with why pushed to `failures`. */
async function verifyReferrer(
  ref: ImageRef & { digest: string },
  digest: string,
  policy: ImageTrustPolicy,
  client: RegistryClient,
  failures: string[],
): Promise<string | undefined> {
  const manifest = (await client.manifest(ref, digest)) as { layers?: { mediaType?: string; digest?: string }[] };
  const layer = manifest.layers?.find((l) => l.mediaType === SIGSTORE_BUNDLE_MEDIA_TYPE);
  if (!layer?.digest) {
    failures.push(`${digest}: no bundle layer`);
    return undefined;
  }
  const bytes = await client.blob(ref, layer.digest);
  let bundle: unknown;
  try {
    bundle = JSON.parse(bytes.toString('utf8'));
  } catch {
    failures.push(`${digest}: the bundle is not JSON`);
    return undefined;
  }
  const label = `signature ${digest}`;
  try {
    if (isKeylessBundle(bundle)) {
      if (!policy.keyless) {
        failures.push(`${label}: keyless (a certificate), and ${policy.source} trusts keys only`);
        return undefined;
      }
      const ok = await verifyKeylessImageSignature(bundle, ref.digest, policy.keyless, label);
      return `${ok.subject} from ${ok.issuer}`;
    }
    if (!policy.keys) {
      failures.push(`${label}: signed by a key, and ${policy.source} trusts keyless identities only`);
      return undefined;
    }
    return verifyImageSignature(bundle, ref.digest, policy.keys, label).key.verifierKey;
  } catch (err) {
    failures.push((err as Error).message);
    return undefined;
  }
}

/** Who signed a cosign v2 signature layer, or undefined with why pushed to `failures`. */
async function verifyCosignV2Layer(
  ref: ImageRef & { digest: string },
  layer: RegistryDescriptor,
  policy: ImageTrustPolicy,
  client: RegistryClient,
  failures: string[],
): Promise<string | undefined> {
  const label = `cosign v2 signature ${layer.digest}`;
  if (!policy.keyless) {
    failures.push(`${label}: ${policy.source} trusts keys only, which baton verifies in cosign v3 bundles`);
    return undefined;
  }
  try {
    const payload = await client.blob(ref, layer.digest);
    const ok = await verifyCosignV2ImageSignature(payload, layer.annotations ?? {}, ref.digest, policy.keyless, label);
    return `${ok.subject} from ${ok.issuer}`;
  } catch (err) {
    if (err instanceof RegistryError) throw err;
    failures.push((err as Error).message);
    return undefined;
  }
}

function trusted(policy: ImageTrustPolicy): string {
  if (policy.keys && policy.keyless) return 'keys and identities';
  return policy.keys ? 'keys' : 'identities';
}
