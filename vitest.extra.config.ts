import { readdirSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

// Integration tests that are not in CI (`.ci/run`) yet: each test's header says why and what has to hold before it
// moves to test/integration/<area>. `pnpm test:extra` runs them all, `pnpm test:argocd` one area (same settings as
// the CI areas; one project per folder in test/extra).
const areas = readdirSync(new URL('./test/extra', import.meta.url), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name);
const resolve = { conditions: ['@baton/source', 'default'] };
const ssr = { resolve: { conditions: ['@baton/source', 'node', 'default'] } };

export default defineConfig({
  test: {
    reporters: ['default'],
    projects: areas.map((area) => ({
      resolve,
      ssr,
      test: {
        name: `extra-${area}`,
        include: [`test/extra/${area}/**/*.test.ts`],
        setupFiles: ['test/setup/no-console.ts'],
        fileParallelism: false,
        testTimeout: 180_000,
        hookTimeout: 900_000,
      },
    })),
  },
});
