// `pnpm image:build`: baton's two images as OCI image layouts, without a container engine: baton-controller (what
// bootstrap-manifests/baton-controller pins) and the baton CLI (what the fleet's Indexed Job engine runs by default).
// Flags:
//   --out DIR         the layouts' parent (default dist/images): DIR/baton-controller and DIR/baton
//   --cache-dir DIR   downloads and layers (default ~/.cache/baton/image)
//   --no-layer-cache  build every layer again from the (cached, verified) downloads
//   --pin             write the digests where they are pinned (40-deployment.yaml, packages/fleet/job-image.json)
//   --json            print {"baton-controller": {...}, "baton": {...}} (digest, sizeBytes, layers, sbom, wallMs)
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_CACHE_DIR } from '@baton/image';
import { buildCliImage, pinCliImage } from '../packages/cli/image/build.js';
import { buildImage, pinDigest } from '../packages/controller/image/build.js';

const REPO_ROOT = resolve(new URL('../', import.meta.url).pathname);

async function main(): Promise<void> {
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
  const out = resolve(values.out ?? join(REPO_ROOT, 'dist/images'));
  const common = {
    cacheDir: resolve(values['cache-dir'] ?? DEFAULT_CACHE_DIR),
    reuseLayers: !values['no-layer-cache'],
  };
  const results: Record<string, { readonly digest: string; readonly wallMs: number }> = {};
  let started = performance.now();
  const controller = await buildImage({ ...common, outDir: join(out, 'baton-controller') });
  results['baton-controller'] = { ...controller, wallMs: Math.round(performance.now() - started) };
  started = performance.now();
  const cli = await buildCliImage({ ...common, outDir: join(out, 'baton') });
  results.baton = { ...cli, wallMs: Math.round(performance.now() - started) };
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

main().catch((err) => {
  process.stderr.write(`image:build: ${(err as Error).message}\n`);
  process.exitCode = 1;
});
