// `pnpm image:build`: baton's two images as OCI image layouts, without a container engine: baton-controller (what
// bootstrap-manifests/baton-controller pins) and the baton CLI (what the fleet's Indexed Job engine runs by default).
// Flags:
//   --out DIR         the layouts' parent (default dist/images): DIR/baton-controller and DIR/baton
//   --cache-dir DIR   downloads and layers (default ~/.cache/baton/image)
//   --no-layer-cache  build every layer again from the (cached, verified) downloads
//   --pin             write the digests where they are pinned (40-deployment.yaml, packages/fleet/job-image.json)
//   --sign-key FILE   sign both images with this key (a release-time input; `baton audit keygen` writes one): a cosign
//                     v3 signature and a signed SLSA provenance attestation (this commit, the SBOM's packages), each
//                     a Sigstore bundle attached to the image as an OCI referrer in its layout; the digests do not
//                     change, so what is pinned stays pinned
//   --json            print {"baton-controller": {...}, "baton": {...}} (digest, sizeBytes, layers, sbom, signature,
//                     wallMs)
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { openSigner, type Signer } from '@baton/audit';
import { DEFAULT_CACHE_DIR, gitBuildSource, imageProvenance, signLayout } from '@baton/image';
import { buildCliImage, CLI_IMAGE_NAME, pinCliImage } from '../packages/cli/image/build.js';
import { buildImage, IMAGE_NAME, pinDigest } from '../packages/controller/image/build.js';

const REPO_ROOT = resolve(new URL('../', import.meta.url).pathname);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      out: { type: 'string' },
      'cache-dir': { type: 'string' },
      'no-layer-cache': { type: 'boolean' },
      pin: { type: 'boolean' },
      'sign-key': { type: 'string' },
      json: { type: 'boolean' },
    },
    strict: true,
  });
  const out = resolve(values.out ?? join(REPO_ROOT, 'dist/images'));
  const common = {
    cacheDir: resolve(values['cache-dir'] ?? DEFAULT_CACHE_DIR),
    reuseLayers: !values['no-layer-cache'],
  };
  // Opened first: a missing or readable-by-others key fails before minutes of building.
  const signer: Signer | undefined = values['sign-key']
    ? await openSigner({ kind: 'key-file', path: resolve(values['sign-key']) }, '--sign-key')
    : undefined;
  const source = signer ? gitBuildSource(REPO_ROOT) : undefined;
  // Signed, each image also carries a signed SLSA provenance attestation: this commit, and what its SBOM lists.
  const sign = async (dir: string, name: string, entry: string) => {
    if (!signer || !source) return {};
    const provenance = (_: unknown, sbom: unknown) => imageProvenance(entry, source, sbom);
    const [signed] = await signLayout(dir, name, signer, { provenance });
    return { signature: signed?.signature, provenance: signed?.provenance, signedBy: signer.verifierKey };
  };
  const results: Record<string, { readonly digest: string; readonly wallMs: number }> = {};
  let started = performance.now();
  const controller = await buildImage({ ...common, outDir: join(out, 'baton-controller') });
  const controllerSignature = await sign(join(out, 'baton-controller'), IMAGE_NAME, 'packages/controller/src/main.ts');
  results['baton-controller'] = {
    ...controller,
    ...controllerSignature,
    wallMs: Math.round(performance.now() - started),
  };
  started = performance.now();
  const cli = await buildCliImage({ ...common, outDir: join(out, 'baton') });
  const cliSignature = await sign(join(out, 'baton'), CLI_IMAGE_NAME, 'packages/cli/src/main.ts');
  results.baton = { ...cli, ...cliSignature, wallMs: Math.round(performance.now() - started) };
  await signer?.close?.();
  if (values.pin) {
    pinDigest(join(REPO_ROOT, 'bootstrap-manifests/baton-controller/40-deployment.yaml'), controller.digest);
    pinCliImage(cli.digest);
  }
  process.stdout.write(
    values.json
      ? `${JSON.stringify(results)}\n`
      : Object.entries(results)
          .map(([name, r]) => `${name} ${r.digest}\n`)
          .join(''),
  );
}

/** The commit this checkout builds, and whether the work tree holds changes it does not. */
main().catch((err) => {
  process.stderr.write(`image:build: ${(err as Error).message}\n`);
  process.exitCode = 1;
});
