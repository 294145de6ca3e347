import {
  isKeylessBundle,
  type KeylessTrust,
  SIGSTORE_BUNDLE_MEDIA_TYPE,
  type TrustedKeySet,
  verifyImageSignature,
  verifyKeylessImageSignature,
} from '@baton/audit';
import { ImageVerifyError } from '@baton/errors';
import { parseImageRef } from './image-ref.js';
import { type RegistryClient, RegistryError } from './registry-client.js';

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
  try {
    const listed = await client.referrers(ref, ref.digest, SIGSTORE_BUNDLE_MEDIA_TYPE);
    if (listed.length === 0)
      throw refuse(
        `unsigned: ${where} lists no signature (Sigstore bundle referrer) of ${ref.digest}; sign it (cosign sign --key, pnpm image:build --sign-key) or ${SKIP}`,
      );
    const failures: string[] = [];
    for (const d of listed) {
      const manifest = (await client.manifest(ref, d.digest)) as { layers?: { mediaType?: string; digest?: string }[] };
      const layer = manifest.layers?.find((l) => l.mediaType === SIGSTORE_BUNDLE_MEDIA_TYPE);
      if (!layer?.digest) {
        failures.push(`${d.digest}: no bundle layer`);
        continue;
      }
      const bytes = await client.blob(ref, layer.digest);
      let bundle: unknown;
      try {
        bundle = JSON.parse(bytes.toString('utf8'));
      } catch {
        failures.push(`${d.digest}: the bundle is not JSON`);
        continue;
      }
      const label = `signature ${d.digest}`;
      try {
        if (isKeylessBundle(bundle)) {
          if (!policy.keyless) {
            failures.push(`${label}: keyless (a certificate), and ${policy.source} trusts keys only`);
            continue;
          }
          const ok = await verifyKeylessImageSignature(bundle, ref.digest, policy.keyless, label);
          return { image, digest: ref.digest, signature: d.digest, signedBy: `${ok.subject} from ${ok.issuer}` };
        }
        if (!policy.keys) {
          failures.push(`${label}: signed by a key, and ${policy.source} trusts keyless identities only`);
          continue;
        }
        const ok = verifyImageSignature(bundle, ref.digest, policy.keys, label);
        return { image, digest: ref.digest, signature: d.digest, signedBy: ok.key.verifierKey };
      } catch (err) {
        failures.push((err as Error).message);
      }
    }
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

function trusted(policy: ImageTrustPolicy): string {
  if (policy.keys && policy.keyless) return 'keys and identities';
  return policy.keys ? 'keys' : 'identities';
}
