import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SigningKey, TrustedKeySet, verifyImageSignature } from '@baton/audit';
import { afterEach, describe, expect, it } from 'vitest';
import { blobPath, filesLayer } from './layers.js';
import { type Descriptor, imageManifest, MEDIA_TYPE, manifestBlobs, referrerManifest, writeLayout } from './oci.js';
import { SIGNATURE_ANNOTATIONS, signLayout } from './sign-layout.js';

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
});
