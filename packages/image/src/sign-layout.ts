import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  attestImage,
  COSIGN_SIGN_PREDICATE_TYPE,
  SIGSTORE_BUNDLE_MEDIA_TYPE,
  type Signer,
  signImage,
} from '@baton/audit';
import { blobPath, putBlob } from './layers.js';
import { type Descriptor, MEDIA_TYPE, referrerManifest } from './oci.js';
import { SLSA_PROVENANCE_PREDICATE_TYPE } from './provenance.js';

/** The annotations cosign puts on a bundle's referrer manifest (cosign's BUNDLE_SPEC), creation time left out. */
function bundleAnnotations(predicateType: string): Readonly<Record<string, string>> {
  return { 'dev.sigstore.bundle.content': 'dsse-envelope', 'dev.sigstore.bundle.predicateType': predicateType };
}

/** A signature's referrer annotations. */
export const SIGNATURE_ANNOTATIONS = bundleAnnotations(COSIGN_SIGN_PREDICATE_TYPE);

/** An image of a layout and the signature {@link signLayout} attached to it. */
export interface SignedImage {
  /** The image manifest's digest. */
  readonly digest: string;
  /** The signature's referrer manifest. */
  readonly signature: string;
  /** The provenance attestation's referrer manifest, when one was made. */
  readonly provenance?: string;
  /** The signer's verifier key (`name+hash+key`), what a profile's image trust policy lists. */
  readonly verifierKey: string;
}

/** Options of {@link signLayout}. */
export interface SignLayoutOptions {
  /**
   * Also attest how the image was built (SLSA provenance v1, signed by the same key, as `cosign attest` attaches it):
   * the predicate, given the image and its SBOM (the layout's SPDX referrer).
   */
  readonly provenance?: (image: Descriptor, sbom: unknown) => unknown;
}

/**
 * Signs every image of the OCI layout at `layoutDir` as `cosign sign --key` (v3) would: a Sigstore bundle of the
 * statement "`name` at this digest", stored in the layout as an OCI referrer of the image (artifactType: the bundle's
 * media type), next to the SBOM; with `provenance`, also a signed SLSA provenance attestation. Bundles from an earlier
 * run are replaced, so signing twice leaves one of each; Ed25519 is deterministic and no timestamp is written, so the
 * same key gives the same layout.
 * @param name the repository the images are published as (the statement's subject name; informative).
 */
export async function signLayout(
  layoutDir: string,
  name: string,
  signer: Signer,
  options: SignLayoutOptions = {},
): Promise<SignedImage[]> {
  const blobs = join(layoutDir, 'blobs');
  const indexPath = join(layoutDir, 'index.json');
  const index = JSON.parse(readFileSync(indexPath, 'utf8')) as { manifests: Descriptor[] };
  const isImage = (d: Descriptor) => d.mediaType === MEDIA_TYPE.manifest && !d.artifactType;
  const images = index.manifests.filter(isImage);
  const signedSubjects = new Set(images.map((d) => d.digest));
  // Earlier bundles of these images go: the new ones replace them.
  const kept = index.manifests.filter((d) => !(isBundle(d) && signedSubjects.has(subjectOf(blobs, d))));
  const added: Descriptor[] = [];
  const signed: SignedImage[] = [];
  for (const image of images) {
    const tag = image.annotations?.['org.opencontainers.image.ref.name'];
    const attach = (bundle: unknown, annotations: Readonly<Record<string, string>>, suffix: string) => {
      const file = Buffer.from(JSON.stringify(bundle));
      const referrer = referrerManifest(blobs, image, file, SIGSTORE_BUNDLE_MEDIA_TYPE, {
        annotations,
        layerTitle: `${putBlob(blobs, file).digest.replace(':', '-')}.sigstore.json`,
      });
      const refName = tag ? { 'org.opencontainers.image.ref.name': `${tag}.${suffix}` } : {};
      added.push({ ...referrer, annotations: { ...annotations, ...refName } });
      return referrer.digest;
    };
    const signature = attach(await signImage(name, image.digest, signer), SIGNATURE_ANNOTATIONS, 'sig');
    let provenance: string | undefined;
    if (options.provenance) {
      const predicate = options.provenance(image, sbomOf(blobs, index.manifests, image.digest));
      const bundle = await attestImage(name, image.digest, SLSA_PROVENANCE_PREDICATE_TYPE, predicate, signer);
      provenance = attach(bundle, PROVENANCE_ANNOTATIONS, 'att');
    }
    signed.push({
      digest: image.digest,
      signature,
      ...(provenance ? { provenance } : {}),
      verifierKey: signer.verifierKey,
    });
  }
  const tmp = `${indexPath}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify({ ...index, manifests: [...kept, ...added] }));
  renameSync(tmp, indexPath);
  return signed;
}

/** A provenance attestation's referrer annotations. */
export const PROVENANCE_ANNOTATIONS = bundleAnnotations(SLSA_PROVENANCE_PREDICATE_TYPE);

function isBundle(d: Descriptor): boolean {
  return d.artifactType === SIGSTORE_BUNDLE_MEDIA_TYPE;
}

function subjectOf(blobs: string, d: Descriptor): string {
  const m = JSON.parse(readFileSync(blobPath(blobs, d.digest), 'utf8')) as { subject?: { digest?: string } };
  return m.subject?.digest ?? '';
}

/** The image's SPDX document from its SBOM referrer in the layout, or undefined when it has none. */
function sbomOf(blobs: string, manifests: readonly Descriptor[], image: string): unknown {
  const referrer = manifests.find((d) => d.artifactType === MEDIA_TYPE.spdx && subjectOf(blobs, d) === image);
  if (!referrer) return undefined;
  const m = JSON.parse(readFileSync(blobPath(blobs, referrer.digest), 'utf8')) as { layers: { digest: string }[] };
  return JSON.parse(readFileSync(blobPath(blobs, m.layers[0]!.digest), 'utf8'));
}
