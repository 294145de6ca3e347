import { readdirSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

// Run every package from source through the exports condition: no build step before tests.
const resolve = { conditions: ['@baton/source', 'default'] };
const ssr = { resolve: { conditions: ['@baton/source', 'node', 'default'] } };

// One project per folder in test/integration/<area>, so `vitest run --project <area>` runs one area.
// Areas whose files cannot share the machine run alone, one file at a time, after the others (vitest puts
// projects without file parallelism in a last group of their own). fleet: each file starts a management cluster and
// several targets at once and saturates both cores by itself; beside another file, local-engine took 502 s instead of
// 267 s and job-engine 341 s instead of 126 s (file times), more than running them alone.
const ALONE = new Set(['fleet']);
const areas = readdirSync(new URL('./test/integration', import.meta.url), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name);

export default defineConfig({
  test: {
    reporters: ['default'],
    // The tests run `baton` as npm installs it, on the compiled dist: build it first (see the file).
    globalSetup: ['test/setup/build.ts'],
    projects: [
      {
        resolve,
        ssr,
        test: {
          name: 'unit',
          include: ['packages/*/src/**/*.test.ts'],
          setupFiles: ['test/setup/no-console.ts'],
          // Loading every CLI noun or compiling the audit schemas takes seconds on 2 busy cores (5 s was seen to fail).
          testTimeout: 30_000,
          // Unit files share their workers' module cache: each no longer loads the Kubernetes client, zod schemas and
          // the rest afresh (all 94 files: 58 s and 107 CPU-s isolated, 16 s and 26 CPU-s shared, measured
          // 2026-12-07; they passed in three shuffled orders). Integration files stay isolated.
          isolate: false,
        },
      },
      ...areas.map((area) => ({
        resolve,
        ssr,
        test: {
          name: area,
          include: [`test/integration/${area}/**/*.test.ts`],
          setupFiles: ['test/setup/no-console.ts'],
          // Files run side by side up to scripts/test.sh's --maxWorkers (each bed has its own ports, directories and,
          // with a real node, network namespace), except the areas that run alone; real control planes are heavy on
          // 2 cores: generous hook timeouts.
          fileParallelism: !ALONE.has(area),
          testTimeout: 180_000,
          hookTimeout: 600_000,
        },
      })),
    ],
  },
});
