import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { COSIGN_SIGN_PREDICATE_TYPE, SIGSTORE_BUNDLE_MEDIA_TYPE, type Signer, signImage } from '@baton/audit';
import { blobPath, putBlob } from './layers.js';
import { type Descriptor, MEDIA_TYPE, referrerManifest } from './oci.js';

/** The annotations cosign puts on a signature's referrer manifest (cosign's BUNDLE_SPEC), creation time left out. */
export const SIGNATURE_ANNOTATIONS = {
  'dev.sigstore.bundle.content': 'dsse-envelope',
  'dev.sigstore.bundle.predicateType': COSIGN_SIGN_PREDICATE_TYPE,
} as const;

/** An image of a layout and the signature {@link signLayout} attached to it. */
export interface SignedImage {
  /** The image manifest's digest. */
  readonly digest: string;
  /** The signature's referrer manifest. */
  readonly signature: string;
  /** The signer's verifier key (`name+hash+key`), what a profile's image trust policy lists. */
  readonly verifierKey: string;
}

/**
 * Signs every image of the OCI layout at `layoutDir` as `cosign sign --key` (v3) would: a Sigstore bundle of the
 * statement "`name` at this digest", stored in the layout as an OCI referrer of the image (artifactType: the bundle's
 * media type), next to the SBOM. A signature from an earlier run is replaced, so signing twice leaves one; Ed25519 is
 * deterministic and no timestamp is written, so the same key gives the same layout.
 * @param name the repository the images are published as (the statement's subject name; informative).
 */
export async function signLayout(layoutDir: string, name: string, signer: Signer): Promise<SignedImage[]> {
  const blobs = join(layoutDir, 'blobs');
  const indexPath = join(layoutDir, 'index.json');
  const index = JSON.parse(readFileSync(indexPath, 'utf8')) as { manifests: Descriptor[] };
  const isImage = (d: Descriptor) => d.mediaType === MEDIA_TYPE.manifest && !d.artifactType;
  const images = index.manifests.filter(isImage);
  const signedSubjects = new Set(images.map((d) => d.digest));
  // Earlier signatures of these images go: the new ones replace them.
  const kept = index.manifests.filter((d) => !(isSignature(d) && signedSubjects.has(subjectOf(blobs, d))));
  const added: Descriptor[] = [];
  const signed: SignedImage[] = [];
  for (const image of images) {
    const bundle = await signImage(name, image.digest, signer);
    const file = Buffer.from(JSON.stringify(bundle));
    const referrer = referrerManifest(blobs, image, file, SIGSTORE_BUNDLE_MEDIA_TYPE, {
      annotations: SIGNATURE_ANNOTATIONS,
      layerTitle: `${putBlob(blobs, file).digest.replace(':', '-')}.sigstore.json`,
    });
    const tag = image.annotations?.['org.opencontainers.image.ref.name'];
    added.push({
      ...referrer,
      annotations: { ...SIGNATURE_ANNOTATIONS, ...(tag ? { 'org.opencontainers.image.ref.name': `${tag}.sig` } : {}) },
    });
    signed.push({ digest: image.digest, signature: referrer.digest, verifierKey: signer.verifierKey });
  }
  const tmp = `${indexPath}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify({ ...index, manifests: [...kept, ...added] }));
  renameSync(tmp, indexPath);
  return signed;
}

function isSignature(d: Descriptor): boolean {
  return d.artifactType === SIGSTORE_BUNDLE_MEDIA_TYPE;
}

function subjectOf(blobs: string, d: Descriptor): string {
  const m = JSON.parse(readFileSync(blobPath(blobs, d.digest), 'utf8')) as { subject?: { digest?: string } };
  return m.subject?.digest ?? '';
}
