import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SigningKey, TrustedKeySet, verifyImageSignature } from '@baton/audit';
import { afterEach, describe, expect, it } from 'vitest';
import { blobPath, filesLayer } from './layers.js';
import { type Descriptor, imageManifest, MEDIA_TYPE, manifestBlobs, referrerManifest, writeLayout } from './oci.js';
import { imageProvenance } from './provenance.js';
import { PROVENANCE_ANNOTATIONS, SIGNATURE_ANNOTATIONS, signLayout } from './sign-layout.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'baton-sign-'));
  dirs.push(d);
  return d;
};
const release = SigningKey.fromSeed('baton.dev/release', Buffer.alloc(32, 5));
const trusted = new TrustedKeySet({ origin: 'baton.dev/release', keys: [{ key: release.verifierKey }] });
const BUNDLE = 'application/vnd.dev.sigstore.bundle.v0.3+json';

/** A layout holding one tagged image and its SBOM, as buildNodeAppImage writes it. */
function layout(): { dir: string; image: Descriptor } {
  const cacheDir = tmp();
  const blobs = join(cacheDir, 'blobs');
  const layer = filesLayer({ cacheDir }, 'app', [
    { type: 'file', path: 'app/main.js', mode: 0o644, data: Buffer.from('x') },
  ]);
  const image = imageManifest(blobs, [layer], { entrypoint: ['/app'], env: [], exposedPorts: [], labels: {} });
  const sbom = referrerManifest(blobs, image, Buffer.from('{}'), MEDIA_TYPE.spdx);
  const dir = join(tmp(), 'layout');
  writeLayout(
    dir,
    blobs,
    [
      { ...image, annotations: { 'org.opencontainers.image.ref.name': '0.1.0' } },
      { ...sbom, annotations: { 'org.opencontainers.image.ref.name': '0.1.0.sbom' } },
    ],
    [...manifestBlobs(blobs, image), ...manifestBlobs(blobs, sbom)],
  );
  return { dir, image };
}
const read = (dir: string, digest: string) => JSON.parse(readFileSync(blobPath(join(dir, 'blobs'), digest), 'utf8'));
const indexOf = (dir: string) =>
  JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8')) as { manifests: Descriptor[] };

describe('signLayout', () => {
  it('attaches a cosign v3 signature to the image as an OCI referrer that verifies with the release key', async () => {
    const { dir, image } = layout();
    const [signed] = await signLayout(dir, 'ghcr.io/baton-dev/app', release);
    expect(signed).toMatchObject({ digest: image.digest, verifierKey: release.verifierKey });

    const entry = indexOf(dir).manifests.find((d) => d.artifactType === BUNDLE);
    expect(entry).toMatchObject({
      mediaType: MEDIA_TYPE.manifest,
      digest: signed!.signature,
      annotations: { ...SIGNATURE_ANNOTATIONS, 'org.opencontainers.image.ref.name': '0.1.0.sig' },
    });
    const referrer = read(dir, signed!.signature);
    expect(referrer).toMatchObject({
      artifactType: BUNDLE,
      config: { mediaType: 'application/vnd.oci.empty.v1+json', size: 2 },
      subject: { mediaType: MEDIA_TYPE.manifest, digest: image.digest, size: image.size },
      annotations: SIGNATURE_ANNOTATIONS,
    });
    const [layer] = referrer.layers;
    expect(layer.mediaType).toBe(BUNDLE);
    expect(layer.annotations['org.opencontainers.image.title']).toBe(`${layer.digest.replace(':', '-')}.sigstore.json`);
    const bundle = read(dir, layer.digest);
    expect(verifyImageSignature(bundle, image.digest, trusted, 'layout').key.verifierKey).toBe(release.verifierKey);
  });

  it('replaces its earlier signature: signing again leaves the same layout, the SBOM kept', async () => {
    const { dir } = layout();
    await signLayout(dir, 'ghcr.io/baton-dev/app', release);
    const first = readFileSync(join(dir, 'index.json'), 'utf8');
    await signLayout(dir, 'ghcr.io/baton-dev/app', release);
    expect(readFileSync(join(dir, 'index.json'), 'utf8')).toBe(first);
    expect(indexOf(dir).manifests.map((d) => d.artifactType ?? 'image')).toEqual(['image', MEDIA_TYPE.spdx, BUNDLE]);
  });

  it('replaces a signature by another key (a rotated release key), so the old one is not published', async () => {
    const { dir, image } = layout();
    await signLayout(dir, 'ghcr.io/baton-dev/app', SigningKey.fromSeed('baton.dev/release', Buffer.alloc(32, 6)));
    const [signed] = await signLayout(dir, 'ghcr.io/baton-dev/app', release);
    const sigs = indexOf(dir).manifests.filter((d) => d.artifactType === BUNDLE);
    expect(sigs.map((d) => d.digest)).toEqual([signed!.signature]);
    expect(read(dir, sigs[0]!.digest).subject.digest).toBe(image.digest);
  });

  it("with provenance, attaches a signed SLSA provenance of the commit and the SBOM's packages beside the signature", async () => {
    const { dir, image } = layout();
    const source = { uri: 'git+https://github.com/baton-dev/baton', commit: 'c'.repeat(40), clean: true };
    const sbom = {
      packages: [
        { SPDXID: 'SPDXRef-Image', name: 'app' },
        {
          SPDXID: 'SPDXRef-Package-0',
          checksums: [{ algorithm: 'SHA256', checksumValue: 'ab'.repeat(32) }],
          externalRefs: [{ referenceType: 'purl', referenceLocator: 'pkg:deb/debian/git@2.39' }],
        },
      ],
    };
    const seen: unknown[] = [];
    const [signed] = await signLayout(dir, 'ghcr.io/baton-dev/app', release, {
      provenance: (img, doc) => {
        seen.push([img.digest, doc]);
        return imageProvenance('packages/app/main.ts', source, sbom);
      },
    });
    // The predicate builder gets the image and the layout's own SBOM (here the test's `{}`).
    expect(seen).toEqual([[image.digest, {}]]);
    const entry = indexOf(dir).manifests.find((d) => d.digest === signed!.provenance);
    expect(entry?.annotations).toEqual({ ...PROVENANCE_ANNOTATIONS, 'org.opencontainers.image.ref.name': '0.1.0.att' });
    const bundle = read(dir, read(dir, signed!.provenance!).layers[0].digest);
    const statement = JSON.parse(Buffer.from(bundle.dsseEnvelope.payload, 'base64').toString());
    expect(statement).toMatchObject({
      predicateType: 'https://slsa.dev/provenance/v1',
      subject: [{ name: 'ghcr.io/baton-dev/app', digest: { sha256: image.digest.slice(7) } }],
      predicate: {
        buildDefinition: {
          buildType: 'https://baton.dev/image-build/v1',
          externalParameters: { source: { uri: source.uri, digest: { gitCommit: source.commit } } },
          internalParameters: { worktreeClean: true },
          resolvedDependencies: [{ uri: 'pkg:deb/debian/git@2.39', digest: { sha256: 'ab'.repeat(32) } }],
        },
        runDetails: { builder: { id: 'https://baton.dev/image-build/pnpm-image-build@v1' } },
      },
    });
    // The provenance is no signature: verifying it as one is refused.
    expect(() => verifyImageSignature(bundle, image.digest, trusted, 'att')).toThrow(/not an image signature/);
    expect(
      verifyImageSignature(read(dir, read(dir, signed!.signature).layers[0].digest), image.digest, trusted, 's').key
        .verifierKey,
    ).toBe(release.verifierKey);
  });
});
