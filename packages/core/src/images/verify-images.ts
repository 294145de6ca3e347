import {
  COSIGN_SIMPLE_SIGNING_MEDIA_TYPE,
  isKeylessBundle,
  type KeylessTrust,
  SIGSTORE_BUNDLE_MEDIA_TYPE,
  SLSA_PROVENANCE_PREDICATE_TYPE,
  type TrustedKeySet,
  verifyCosignV2ImageSignature,
  verifyImageSignature,
  verifyKeylessImageSignature,
} from '@baton/audit';
import { ImageVerifyError } from '@baton/errors';
import { type ImageRef, parseImageRef } from './image-ref.js';
import { matchesImage } from './image-rules.js';
import { checkProvenance, type ProvenanceFacts, type ProvenancePolicy } from './provenance-policy.js';
import { type RegistryClient, type RegistryDescriptor, RegistryError } from './registry-client.js';

/** The keys or keyless identities an image may be signed by (either verifies). */
export interface ImageSigners {
  readonly keys?: TrustedKeySet;
  readonly keyless?: KeylessTrust;
}

/** A rule for some repositories: its own signers, or the reason its images are pushed unsigned. */
export interface ImageTrustRule extends ImageSigners {
  /** `push.images.rules[1]` or `profile argocd (…/profile.yaml): imageTrust.rules[0]`. */
  readonly label: string;
  /** Repository patterns (see `matchesImage`). */
  readonly images: readonly string[];
  readonly unsigned?: string;
}

/**
 * What the images must be signed by, and where it was declared: the first rule whose images match decides, and the
 * policy's own keys and keyless identities govern every other image (one at least of the three).
 */
export interface ImageTrustPolicy extends ImageSigners {
  /** `push.images.trustedKeys (keys/trusted-keys.yaml)` or `profile flux (…/profile.yaml): imageTrust`. */
  readonly source: string;
  readonly rules?: readonly ImageTrustRule[];
  /** With each signed image, an SLSA provenance attestation by the same signers must name a trusted builder. */
  readonly provenance?: ProvenancePolicy;
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
  /** When the policy asks for provenance: what the verified attestation says, and its referrer manifest. */
  readonly provenance?: ProvenanceFacts & { readonly attestation: string };
}

/** An image pinned by digest that a rule lets through without a signature. */
export interface UnsignedImage {
  readonly image: string;
  readonly digest: string;
  /** The rule's reason. */
  readonly reason: string;
  /** Which rule. */
  readonly rule: string;
}

/** What {@link verifyImages} found: every image is in one list. */
export interface ImagesVerdict {
  readonly verified: VerifiedImage[];
  readonly unsigned: UnsignedImage[];
}

const SKIP = 'pass --insecure-skip-image-verify to push it unverified (recorded in the audit event)';

/**
 * Verifies each image (in order, each once) against `policy`, reading its signatures from its registry with the
 * operator's network access: it must be pinned by digest, and unless a rule lets it through unsigned, a cosign
 * signature (v3: a Sigstore bundle referrer; v2: the `sha256-<hex>.sig` tag) of that digest must verify with a key or
 * keyless identity the governing rule, or else the policy, trusts.
 * @throws {ImageVerifyError} naming the first image that fails and why: pinned by tag, unsigned, signed by a key the
 * policy does not trust, a signature of another digest, no rule governing it, or a registry that cannot be read.
 */
export async function verifyImages(
  images: readonly string[],
  policy: ImageTrustPolicy,
  client: RegistryClient,
): Promise<ImagesVerdict> {
  const verdict: ImagesVerdict = { verified: [], unsigned: [] };
  for (const image of [...new Set(images)]) {
    const v = await verifyImage(image, policy, client);
    if ('reason' in v) verdict.unsigned.push(v);
    else verdict.verified.push(v);
  }
  return verdict;
}

async function verifyImage(
  image: string,
  policy: ImageTrustPolicy,
  client: RegistryClient,
): Promise<VerifiedImage | UnsignedImage> {
  const refuse = (why: string, cause?: unknown) =>
    new ImageVerifyError(`image ${image}: ${why}`, { details: { image }, ...(cause ? { cause } : {}) });
  const ref = parseImageRef(image);
  if (typeof ref === 'string') throw refuse(`${ref}; ${SKIP}`);
  if (!ref.digest)
    throw refuse(
      `pinned by tag, and ${policy.source} verifies digests: pin it as ${image}@sha256:<digest> (the digest the signature names)`,
    );
  const rule = policy.rules?.find((r) => r.images.some((p) => matchesImage(p, ref)));
  if (rule?.unsigned !== undefined) return { image, digest: ref.digest, reason: rule.unsigned, rule: rule.label };
  const signers: ImageSigners & { source: string } = rule ? { ...rule, source: rule.label } : policy;
  if (!signers.keys && !signers.keyless)
    throw refuse(
      `no rule of ${policy.source} governs ${ref.registry}/${ref.repository}, and it trusts no keys or identities for other images: add a rule whose images match it (its signers, or unsigned with the reason)`,
    );
  const where = client.baseOf(ref);
  const pinned = { ...ref, digest: ref.digest };
  try {
    const failures: string[] = [];
    const listed = await client.referrers(ref, ref.digest, SIGSTORE_BUNDLE_MEDIA_TYPE);
    const withProvenance = async (signed: Omit<VerifiedImage, 'provenance'>): Promise<VerifiedImage> => {
      if (!policy.provenance) return signed;
      const found = await verifyProvenance(pinned, listed, signers, policy.provenance, client);
      if (typeof found === 'string')
        throw refuse(
          `signed by ${signed.signedBy}, but ${policy.source} requires SLSA provenance and ${found}; attach one (cosign attest --type slsaprovenance1, pnpm image:build --sign-key) or ${SKIP}`,
        );
      return { ...signed, provenance: found };
    };
    for (const d of listed) {
      const signedBy = await verifyReferrer(pinned, d.digest, signers, client, failures);
      if (signedBy) return withProvenance({ image, digest: ref.digest, signature: d.digest, signedBy });
    }
    // cosign before v3 (and every image signed with it) keeps signatures in the `sha256-<hex>.sig` tag instead.
    const v2 = (await client.cosignV2Signatures(ref, ref.digest)).filter(
      (l) => l.mediaType === COSIGN_SIMPLE_SIGNING_MEDIA_TYPE,
    );
    for (const layer of v2) {
      const signedBy = await verifyCosignV2Layer(pinned, layer, signers, client, failures);
      if (signedBy) return withProvenance({ image, digest: ref.digest, signature: layer.digest, signedBy });
    }
    if (listed.length === 0 && v2.length === 0)
      throw refuse(
        `unsigned: ${where} lists no signature of ${ref.digest} (no Sigstore bundle referrer, no cosign ${ref.digest.replace(':', '-')}.sig tag); sign it (cosign sign, pnpm image:build --sign-key) or ${SKIP}`,
      );
    throw refuse(
      `no signature verifies with the ${trusted(signers)} of ${signers.source}: ${failures.join('; ')}; ${SKIP}`,
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
  policy: ImageSigners & { source: string },
  client: RegistryClient,
  failures: string[],
): Promise<string | undefined> {
  const bundle = await readBundle(ref, digest, client, failures);
  if (bundle === undefined) return undefined;
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

/** The Sigstore bundle of referrer `digest`, or undefined with why pushed to `failures`. */
async function readBundle(
  ref: ImageRef & { digest: string },
  digest: string,
  client: RegistryClient,
  failures: string[],
): Promise<unknown> {
  const manifest = (await client.manifest(ref, digest)) as { layers?: { mediaType?: string; digest?: string }[] };
  const layer = manifest.layers?.find((l) => l.mediaType === SIGSTORE_BUNDLE_MEDIA_TYPE);
  if (!layer?.digest) {
    failures.push(`${digest}: no bundle layer`);
    return undefined;
  }
  try {
    return JSON.parse((await client.blob(ref, layer.digest)).toString('utf8'));
  } catch (err) {
    if (err instanceof RegistryError) throw err;
    failures.push(`${digest}: the bundle is not JSON`);
    return undefined;
  }
}

/**
 * The first of the image's bundle referrers that is an SLSA provenance v1 attestation of its digest, signed by
 * `signers`, whose builder (and source) `policy` trusts; or a string saying why none is.
 */
async function verifyProvenance(
  ref: ImageRef & { digest: string },
  listed: readonly RegistryDescriptor[],
  signers: ImageSigners,
  policy: ProvenancePolicy,
  client: RegistryClient,
): Promise<(ProvenanceFacts & { attestation: string }) | string> {
  const failures: string[] = [];
  // Signatures are referrers too: only attestations that say they are provenance are read.
  const attestations = listed.filter(
    (d) => d.annotations?.['dev.sigstore.bundle.predicateType'] === SLSA_PROVENANCE_PREDICATE_TYPE,
  );
  for (const d of attestations) {
    const bundle = await readBundle(ref, d.digest, client, failures);
    if (bundle === undefined) continue;
    const label = `attestation ${d.digest}`;
    try {
      const statement = isKeylessBundle(bundle)
        ? signers.keyless
          ? (
              await verifyKeylessImageSignature(
                bundle,
                ref.digest,
                signers.keyless,
                label,
                SLSA_PROVENANCE_PREDICATE_TYPE,
              )
            ).statement
          : undefined
        : signers.keys
          ? verifyImageSignature(bundle, ref.digest, signers.keys, label, SLSA_PROVENANCE_PREDICATE_TYPE).statement
          : undefined;
      if (!statement) {
        failures.push(`${label}: signed the other way (key or keyless) than the image's signers`);
        continue;
      }
      const facts = checkProvenance(statement.predicate, policy);
      if (typeof facts === 'string') failures.push(`${label}: ${facts}`);
      else return { ...facts, attestation: d.digest };
    } catch (err) {
      failures.push((err as Error).message);
    }
  }
  return attestations.length === 0
    ? 'its registry lists no provenance attestation of it'
    : `no attestation holds: ${failures.join('; ')}`;
}

/** Who signed a cosign v2 signature layer, or undefined with why pushed to `failures`. */
async function verifyCosignV2Layer(
  ref: ImageRef & { digest: string },
  layer: RegistryDescriptor,
  policy: ImageSigners & { source: string },
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

function trusted(policy: ImageSigners): string {
  if (policy.keys && policy.keyless) return 'keys and identities';
  return policy.keys ? 'keys' : 'identities';
}
