import { readdirSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

// Run every package from source through the exports condition: no build step before tests.
const resolve = { conditions: ['@baton/source', 'default'] };
const ssr = { resolve: { conditions: ['@baton/source', 'node', 'default'] } };

// One project per folder in test/integration/<area>, so `vitest run --project <area>` runs one area.
const areas = readdirSync(new URL('./test/integration', import.meta.url), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name);

export default defineConfig({
  test: {
    reporters: ['default'],
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
        },
      },
      ...areas.map((area) => ({
        resolve,
        ssr,
        test: {
          name: area,
          include: [`test/integration/${area}/**/*.test.ts`],
          setupFiles: ['test/setup/no-console.ts'],
          // Real control planes are heavy on 2 cores: one file at a time, generous hook timeouts.
          fileParallelism: false,
          testTimeout: 180_000,
          hookTimeout: 600_000,
        },
      })),
    ],
  },
});
