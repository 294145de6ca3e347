import { SIGSTORE_BUNDLE_MEDIA_TYPE, type TrustedKeySet, verifyImageSignature } from '@baton/audit';
import { ImageVerifyError } from '@baton/errors';
import { parseImageRef } from './image-ref.js';
import { type RegistryClient, RegistryError } from './registry-client.js';

/** The keys an image must be signed by, and where they were declared (for messages). */
export interface ImageTrustPolicy {
  /** `plan.yaml: push.images.trustedKeys (keys/trusted-keys.yaml)` or `profile flux: imageTrust`. */
  readonly source: string;
  readonly keys: TrustedKeySet;
}

/** An image whose signature verified. */
export interface VerifiedImage {
  /** The reference as the push set writes it. */
  readonly image: string;
  readonly digest: string;
  /** The signature's referrer manifest. */
  readonly signature: string;
  /** The verifier key that signed it (`name+hash+key`). */
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
      try {
        const ok = verifyImageSignature(bundle, ref.digest, policy.keys, `signature ${d.digest}`);
        return { image, digest: ref.digest, signature: d.digest, signedBy: ok.key.verifierKey };
      } catch (err) {
        failures.push((err as Error).message);
      }
    }
    throw refuse(`no signature verifies with the keys of ${policy.source}: ${failures.join('; ')}; ${SKIP}`);
  } catch (err) {
    if (err instanceof RegistryError)
      throw refuse(
        `cannot read its signatures: ${err.message}; check the operator's network access to ${ref.registry}, or name a mirror that serves it (push.images.mirrors), or ${SKIP}`,
        err,
      );
    throw err;
  }
}
