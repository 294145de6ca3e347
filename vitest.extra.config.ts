import { defineConfig } from 'vitest/config';

// Integration tests that are not in CI (`.ci/run`) yet: each area's README or test header says why and what has to
// hold before it moves to test/integration/<area>. Run one with `pnpm test:argocd` (same settings as the CI areas).
const resolve = { conditions: ['@baton/source', 'default'] };
const ssr = { resolve: { conditions: ['@baton/source', 'node', 'default'] } };

export default defineConfig({
  test: {
    reporters: ['default'],
    projects: [
      {
        resolve,
        ssr,
        test: {
          name: 'argocd',
          include: ['test/extra/argocd/**/*.test.ts'],
          setupFiles: ['test/setup/no-console.ts'],
          fileParallelism: false,
          testTimeout: 180_000,
          hookTimeout: 900_000,
        },
      },
    ],
  },
});
