import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { build } from 'esbuild';
import type { ImageLock } from './inputs.js';
import { appFilesLayer, debianLayer, type Layer, nodeLayer } from './layers.js';
import {
  type Descriptor,
  type ImageRuntime,
  imageManifest,
  MEDIA_TYPE,
  manifestBlobs,
  referrerManifest,
  writeLayout,
} from './oci.js';
import { lockedPackages, type SbomPackage, spdxDocument } from './sbom.js';

/** A TypeScript entry point and everything it imports in one ES module, with the npm packages that went into it. */
export interface Bundle {
  readonly code: Buffer;
  readonly packages: readonly SbomPackage[];
}

/**
 * Bundles `entry` (relative to `repoRoot`) for Node.js 20 with esbuild, from the workspace's sources
 * (`@baton/source`). `external` imports stay imports (a package the image leaves out, loaded only when installed).
 */
export async function bundleEntry(o: {
  readonly repoRoot: string;
  readonly entry: string;
  readonly external?: readonly string[];
}): Promise<Bundle> {
  const result = await build({
    absWorkingDir: o.repoRoot,
    entryPoints: [o.entry],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    conditions: ['@baton/source'],
    external: [...(o.external ?? [])],
    // pino and other CommonJS dependencies call require() for Node's built-ins.
    banner: {
      js: "import { createRequire as __batonRequire } from 'node:module';\nconst require = __batonRequire(import.meta.url);",
    },
    outfile: 'app/main.mjs',
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  const code = Buffer.from(result.outputFiles[0]!.contents);
  const found = new Map<string, SbomPackage>();
  for (const input of Object.keys(result.metafile.inputs)) {
    const pkg = packageOf(o.repoRoot, join(o.repoRoot, input));
    if (pkg) found.set(`${pkg.name}@${pkg.version}`, pkg);
  }
  return { code, packages: [...found.values()].sort((a, b) => (a.purl < b.purl ? -1 : 1)) };
}

/** The npm package a bundled file comes from: the nearest package.json above it. */
function packageOf(repoRoot: string, file: string): SbomPackage | undefined {
  for (let dir = dirname(file); dir.startsWith(repoRoot) && dir !== repoRoot; dir = dirname(dir)) {
    const path = join(dir, 'package.json');
    if (!existsSync(path)) continue;
    const { name, version } = JSON.parse(readFileSync(path, 'utf8')) as { name?: string; version?: string };
    if (!name || !version) continue;
    const isWorkspace = !relative(repoRoot, dir).includes('node_modules');
    return {
      name,
      version,
      purl: `pkg:npm/${name.replace('@', '%40')}@${version}`,
      downloadLocation: isWorkspace
        ? 'NOASSERTION'
        : `https://registry.npmjs.org/${name}/-/${name.split('/').pop()}-${version}.tgz`,
    };
  }
  return undefined;
}

/** What {@link buildNodeAppImage} builds. */
export interface NodeAppImage {
  /** e.g. `ghcr.io/baton-dev/baton`, for the SBOM. */
  readonly name: string;
  /** The tag in the layout's index (`org.opencontainers.image.ref.name`); the SBOM is `<version>.sbom`. */
  readonly version: string;
  readonly lock: ImageLock;
  /** The app's files under `app/` (the bundle and what it reads beside it). */
  readonly files: readonly { readonly path: string; readonly data: Buffer }[];
  /** The bundle's npm packages, listed in the SBOM with the lock's. */
  readonly packages: readonly SbomPackage[];
  /** The app layer's history line. */
  readonly createdBy: string;
  readonly runtime: ImageRuntime;
}

/**
 * A Node.js application image, written as an OCI layout at `outDir`: the Debian layer of the lock, Node.js, the app,
 * and an SPDX SBOM as a referrer. Same inputs, same digest.
 * @returns the image manifest's digest, the layers' size, the layers and the SBOM's digest.
 */
export function buildNodeAppImage(
  image: NodeAppImage,
  o: { readonly outDir: string; readonly cacheDir: string; readonly reuseLayers: boolean },
): { digest: string; sizeBytes: number; layers: Layer[]; sbom: string; packages: number } {
  const blobDir = join(o.cacheDir, 'blobs');
  const lo = { cacheDir: o.cacheDir, reuse: o.reuseLayers };
  const layers = [
    debianLayer(lo, image.lock),
    nodeLayer(lo, image.lock),
    appFilesLayer(lo, image.createdBy, image.files),
  ];
  const manifest = imageManifest(blobDir, layers, image.runtime);
  const packages = [...lockedPackages(image.lock), ...image.packages];
  const sbomFile = Buffer.from(JSON.stringify(spdxDocument(image.name, manifest.digest, packages), null, 2));
  const sbom = referrerManifest(blobDir, manifest, sbomFile, MEDIA_TYPE.spdx);
  const manifests: Descriptor[] = [
    { ...manifest, annotations: { 'org.opencontainers.image.ref.name': image.version } },
    { ...sbom, annotations: { 'org.opencontainers.image.ref.name': `${image.version}.sbom` } },
  ];
  writeLayout(o.outDir, blobDir, manifests, [...manifestBlobs(blobDir, manifest), ...manifestBlobs(blobDir, sbom)]);
  const sizeBytes = layers.reduce((n, l) => n + l.size, 0);
  return { digest: manifest.digest, sizeBytes, layers, sbom: sbom.digest, packages: packages.length };
}
