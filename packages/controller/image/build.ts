import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildNodeAppImage, bundleEntry, DEFAULT_CACHE_DIR, readLock } from '@baton/image';

// The baton-controller image as an OCI image layout, without a container engine (what 40-deployment.yaml pins by
// digest). Built by `pnpm image:build` (scripts/image-build.ts) with the CLI's.

/** The image's name, as the manifests reference it. */
export const IMAGE_NAME = 'ghcr.io/baton-dev/baton-controller';
const REPO_ROOT = resolve(new URL('../../../', import.meta.url).pathname);

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

// Run directly (the setup and the test bed do): builds the layout into --out (default dist/images/baton-controller)
// and prints the digest. `pnpm image:build` (scripts/image-build.ts) has the other flags.
if (process.argv[1] && resolve(process.argv[1]) === new URL(import.meta.url).pathname) {
  const out = process.argv.indexOf('--out');
  buildImage({
    outDir: resolve(out > 0 ? process.argv[out + 1]! : join(REPO_ROOT, 'dist/images/baton-controller')),
    cacheDir: DEFAULT_CACHE_DIR,
    reuseLayers: true,
  }).then(
    (r) => process.stdout.write(`${r.digest}\n`),
    (err) => {
      process.stderr.write(`image:build (baton-controller): ${(err as Error).message}\n`);
      process.exitCode = 1;
    },
  );
}
