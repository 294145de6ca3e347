import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  appLayer,
  DEFAULT_CACHE_DIR,
  type Descriptor,
  debianLayer,
  imageManifest,
  lockedPackages,
  MEDIA_TYPE,
  manifestBlobs,
  nodeLayer,
  readLock,
  referrerManifest,
  type SbomPackage,
  spdxDocument,
  writeLayout,
} from '@baton/image';
import { build } from 'esbuild';

// `pnpm image:build`: the baton-controller image as an OCI image layout, without a container engine. Prints the
// image manifest's digest (what 40-deployment.yaml pins). Flags:
//   --out DIR         the layout (default dist/images/baton-controller)
//   --cache-dir DIR   downloads and layers (default ~/.cache/baton/image)
//   --no-layer-cache  build every layer again from the (cached, verified) downloads
//   --pin             write the digest into bootstrap-manifests/baton-controller/40-deployment.yaml
//   --json            print {digest, sizeBytes, layers, sbom, wallMs} instead of the digest alone

/** The image's name, as the manifests reference it. */
export const IMAGE_NAME = 'ghcr.io/baton-dev/baton-controller';
const REPO_ROOT = resolve(new URL('../../../', import.meta.url).pathname);
const DEPLOYMENT = join(REPO_ROOT, 'bootstrap-manifests/baton-controller/40-deployment.yaml');

/** The controller and everything it imports in one ES module, with the npm packages that went into it. */
async function bundleController(): Promise<{ code: Buffer; packages: SbomPackage[] }> {
  const result = await build({
    absWorkingDir: REPO_ROOT,
    entryPoints: ['packages/controller/src/main.ts'],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    conditions: ['@baton/source'],
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
    const pkg = packageOf(join(REPO_ROOT, input));
    if (pkg) found.set(`${pkg.name}@${pkg.version}`, pkg);
  }
  return { code, packages: [...found.values()].sort((a, b) => (a.purl < b.purl ? -1 : 1)) };
}

/** The npm package a bundled file comes from: the nearest package.json above it. */
function packageOf(file: string): SbomPackage | undefined {
  for (let dir = dirname(file); dir.startsWith(REPO_ROOT) && dir !== REPO_ROOT; dir = dirname(dir)) {
    const path = join(dir, 'package.json');
    if (!existsSync(path)) continue;
    const { name, version } = JSON.parse(readFileSync(path, 'utf8')) as { name?: string; version?: string };
    if (!name || !version) continue;
    const isWorkspace = !relative(REPO_ROOT, dir).includes('node_modules');
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

/** Builds the image and writes its layout. @returns the image manifest's digest and what went into it. */
export async function buildImage(o: { outDir: string; cacheDir: string; reuseLayers: boolean }) {
  const lock = readLock(new URL('image.lock.json', import.meta.url).pathname);
  const blobDir = join(o.cacheDir, 'blobs');
  const bundle = await bundleController();
  const lo = { cacheDir: o.cacheDir, reuse: o.reuseLayers };
  const layers = [debianLayer(lo, lock), nodeLayer(lo, lock), appLayer(lo, bundle.code)];
  const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'packages/controller/package.json'), 'utf8')) as {
    version: string;
  };
  const image = imageManifest(blobDir, layers, {
    entrypoint: ['/usr/local/bin/node', '/app/main.mjs'],
    env: [
      'PATH=/usr/local/bin:/usr/bin:/bin',
      'NODE_ENV=production',
      'HOME=/tmp',
      'BATON_WORK_DIR=/tmp/baton-controller',
    ],
    exposedPorts: [8080],
    labels: {
      'org.opencontainers.image.title': 'baton-controller',
      'org.opencontainers.image.source': 'https://github.com/baton-dev/baton',
      'org.opencontainers.image.version': version,
    },
  });
  const packages = [...lockedPackages(lock), ...bundle.packages];
  const sbomFile = Buffer.from(JSON.stringify(spdxDocument(IMAGE_NAME, image.digest, packages), null, 2));
  const sbom = referrerManifest(blobDir, image, sbomFile, MEDIA_TYPE.spdx);
  const manifests: Descriptor[] = [
    { ...image, annotations: { 'org.opencontainers.image.ref.name': version } },
    { ...sbom, annotations: { 'org.opencontainers.image.ref.name': `${version}.sbom` } },
  ];
  writeLayout(o.outDir, blobDir, manifests, [...manifestBlobs(blobDir, image), ...manifestBlobs(blobDir, sbom)]);
  const sizeBytes = layers.reduce((n, l) => n + l.size, 0);
  return { digest: image.digest, sizeBytes, layers, sbom: sbom.digest, packages: packages.length };
}

/** Rewrites the Deployment's image reference to `digest`. */
export function pinDigest(deploymentPath: string, digest: string): void {
  const text = readFileSync(deploymentPath, 'utf8');
  const next = text.replace(/(image: ghcr\.io\/baton-dev\/baton-controller)@sha256:[0-9a-f]{64}/, `$1@${digest}`);
  if (next === text && !text.includes(digest))
    throw new Error(`${deploymentPath}: no \`image: ${IMAGE_NAME}@sha256:…\` line to pin`);
  writeFileSync(deploymentPath, next);
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      out: { type: 'string' },
      'cache-dir': { type: 'string' },
      'no-layer-cache': { type: 'boolean' },
      pin: { type: 'boolean' },
      json: { type: 'boolean' },
    },
    strict: true,
  });
  const started = performance.now();
  const result = await buildImage({
    outDir: resolve(values.out ?? join(REPO_ROOT, 'dist/images/baton-controller')),
    cacheDir: resolve(values['cache-dir'] ?? DEFAULT_CACHE_DIR),
    reuseLayers: !values['no-layer-cache'],
  });
  if (values.pin) pinDigest(DEPLOYMENT, result.digest);
  const wallMs = Math.round(performance.now() - started);
  process.stdout.write(values.json ? `${JSON.stringify({ ...result, wallMs })}\n` : `${result.digest}\n`);
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === new URL(import.meta.url).pathname) {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      process.stderr.write(`image:build: ${(err as Error).message}\n`);
      process.exitCode = 1;
    },
  );
}
