import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildNodeAppImage, DEFAULT_CACHE_DIR, readLock } from '@baton/image';
import { bundleCli, VERIFY_WORKER_FILE } from '../build/bundle.js';

// The baton CLI as an OCI image layout, without a container engine: what the fleet's Indexed Job engine runs in each
// shard's pod (`baton fleet shard`). Built by `pnpm image:build` (scripts/image-build.ts) with the controller's.

/** The image's name, as the fleet's Job engine references it. */
export const CLI_IMAGE_NAME = 'ghcr.io/baton-dev/baton';
const REPO_ROOT = resolve(new URL('../../../', import.meta.url).pathname);
/** Where the Job engine's default image is pinned (read at run time, never bundled: the image cannot hold its own digest). */
export const DEFAULT_IMAGE_FILE = join(REPO_ROOT, 'packages/fleet/job-image.json');

/**
 * Builds the image and writes its layout: the CLI's bundle (the one npm installs, build/bundle.ts) at
 * /app/dist/main.mjs with the verifier's worker and the package.json beside (the CLI reads its version there), on the
 * controller's Debian packages and Node.js, as 65532. The bundle leaves `testenv` out, so in the image `baton testenv`
 * says to install it; and `pkcs11js`, so in the image an audit key is a file or a signer command.
 * @returns the image manifest's digest and what went into it.
 */
export async function buildCliImage(o: { outDir: string; cacheDir: string; reuseLayers: boolean }) {
  const lock = readLock(new URL('image.lock.json', import.meta.url).pathname);
  const bundle = await bundleCli();
  const pkgText = readFileSync(join(REPO_ROOT, 'packages/cli/package.json'));
  const { version } = JSON.parse(pkgText.toString()) as { version: string };
  return buildNodeAppImage(
    {
      name: CLI_IMAGE_NAME,
      version,
      lock,
      files: [
        { path: 'app/dist/main.mjs', data: bundle.main.code },
        { path: `app/dist/${VERIFY_WORKER_FILE}`, data: bundle.verifyWorker.code },
        { path: 'app/package.json', data: pkgText },
      ],
      packages: bundle.main.packages,
      createdBy: 'baton CLI bundle (esbuild)',
      runtime: {
        entrypoint: ['/usr/local/bin/node', '/app/dist/main.mjs'],
        env: ['PATH=/usr/local/bin:/usr/bin:/bin', 'NODE_ENV=production', 'HOME=/tmp'],
        exposedPorts: [],
        labels: {
          'org.opencontainers.image.title': 'baton',
          'org.opencontainers.image.source': 'https://github.com/baton-dev/baton',
          'org.opencontainers.image.version': version,
        },
      },
    },
    o,
  );
}

/** Writes `{ "image": "ghcr.io/baton-dev/baton@<digest>" }`, the Job engine's default image. */
export function pinCliImage(digest: string, path = DEFAULT_IMAGE_FILE): void {
  writeFileSync(path, `${JSON.stringify({ image: `${CLI_IMAGE_NAME}@${digest}` }, null, 2)}\n`);
}

// Run directly (the test bed does): builds the layout into --out (default dist/images/baton) and prints the digest.
if (process.argv[1] && resolve(process.argv[1]) === new URL(import.meta.url).pathname) {
  const out = process.argv.indexOf('--out');
  buildCliImage({
    outDir: resolve(out > 0 ? process.argv[out + 1]! : join(REPO_ROOT, 'dist/images/baton')),
    cacheDir: DEFAULT_CACHE_DIR,
    reuseLayers: true,
  }).then(
    (r) => process.stdout.write(`${r.digest}\n`),
    (err) => {
      process.stderr.write(`image:build (baton CLI): ${(err as Error).message}\n`);
      process.exitCode = 1;
    },
  );
}
