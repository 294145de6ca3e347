import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { buildNodeAppImage, bundleEntry, DEFAULT_CACHE_DIR, readLock } from '@baton/image';

// `pnpm image:build` builds this image and the CLI's (scripts/image-build.ts); this file alone builds the
// baton-controller image as an OCI image layout, without a container engine, and prints the image manifest's digest
// (what 40-deployment.yaml pins). Flags:
//   --out DIR         the layout (default dist/images/baton-controller)
//   --cache-dir DIR   downloads and layers (default ~/.cache/baton/image)
//   --no-layer-cache  build every layer again from the (cached, verified) downloads
//   --pin             write the digest into bootstrap-manifests/baton-controller/40-deployment.yaml
//   --json            print {digest, sizeBytes, layers, sbom, wallMs} instead of the digest alone

/** The image's name, as the manifests reference it. */
export const IMAGE_NAME = 'ghcr.io/baton-dev/baton-controller';
const REPO_ROOT = resolve(new URL('../../../', import.meta.url).pathname);
const DEPLOYMENT = join(REPO_ROOT, 'bootstrap-manifests/baton-controller/40-deployment.yaml');

/** Builds the image and writes its layout. @returns the image manifest's digest and what went into it. */
export async function buildImage(o: { outDir: string; cacheDir: string; reuseLayers: boolean }) {
  const lock = readLock(new URL('image.lock.json', import.meta.url).pathname);
  const bundle = await bundleEntry({ repoRoot: REPO_ROOT, entry: 'packages/controller/src/main.ts' });
  const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'packages/controller/package.json'), 'utf8')) as {
    version: string;
  };
  return buildNodeAppImage(
    {
      name: IMAGE_NAME,
      version,
      lock,
      files: [{ path: 'app/main.mjs', data: bundle.code }],
      packages: bundle.packages,
      createdBy: 'baton-controller bundle (esbuild)',
      runtime: {
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
      },
    },
    o,
  );
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
