import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Bundle, bundleEntry } from '@baton/image';

// The CLI as npm installs it and as its image runs it: one esbuild bundle of the CLI with every workspace package and
// library it imports. Loaded as installed, `baton` resolved and linked about 1,000 ES modules (most of them the
// Kubernetes client's generated APIs) on every start: `baton up --help` cost 1.3 CPU-s, against 0.5 for the bundle
// (Node 20, which has no compile cache; measured 2026-12-07), and the test suite starts `baton` about 370 times.

const REPO_ROOT = resolve(new URL('../../../', import.meta.url).pathname);

/**
 * Left out: `@baton/testenv` (the CLI loads it only when it is installed beside it, and says so otherwise) and
 * `pkcs11js` (the PKCS#11 signer's native binding, an optional peer).
 */
const EXTERNAL = ['@baton/testenv', '@baton/testenv/*', 'pkcs11js'];

/** The bundle's files, by their name beside each other. */
export interface CliBundle {
  /** The CLI: `baton.mjs` in the npm package (bin/baton.js runs it), `main.mjs` in the image. */
  readonly main: Bundle;
  /** The audit log verifier's worker thread, found beside the bundle that starts it (large logs). */
  readonly verifyWorker: Bundle;
}

/** The worker's file name: what `@baton/audit`'s chunk-worker-pool looks for beside the code that starts it. */
export const VERIFY_WORKER_FILE = 'verify-worker.js';

/** Bundles the CLI and the verifier's worker from the workspace's sources. */
export async function bundleCli(): Promise<CliBundle> {
  const [main, verifyWorker] = await Promise.all([
    bundleEntry({ repoRoot: REPO_ROOT, entry: 'packages/cli/src/main.ts', external: EXTERNAL }),
    bundleEntry({ repoRoot: REPO_ROOT, entry: 'packages/audit/src/verify-worker.ts', external: EXTERNAL }),
  ]);
  return { main, verifyWorker };
}

/**
 * Writes the npm package's bundle into `distDir`: `baton.mjs`, the verifier's worker, and a copy of the fleet's
 * `job-image.json` (the Job engine's default image, read at run time beside the code that reads it, never bundled).
 */
export async function writeCliBundle(distDir = join(REPO_ROOT, 'packages/cli/dist')): Promise<void> {
  const { main, verifyWorker } = await bundleCli();
  mkdirSync(distDir, { recursive: true });
  writeFileSync(join(distDir, 'baton.mjs'), main.code);
  writeFileSync(join(distDir, VERIFY_WORKER_FILE), verifyWorker.code);
  copyFileSync(join(REPO_ROOT, 'packages/fleet/job-image.json'), join(distDir, 'job-image.json'));
}

// Run directly (`pnpm build` and the tests' global setup; `pnpm pack` packs what `pnpm build` wrote, as it does dist).
if (process.argv[1] && resolve(process.argv[1]) === new URL(import.meta.url).pathname) {
  writeCliBundle().catch((err) => {
    process.stderr.write(`bundle (baton CLI): ${(err as Error).message}\n`);
    process.exitCode = 1;
  });
}
