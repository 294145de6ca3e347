#!/usr/bin/env node
// The installed `baton`: the CLI's bundle (one file, build/bundle.ts), which starts on 0.5 CPU-s where loading the
// compiled modules took 1.3. From the repository, `pnpm build` writes it; `pnpm baton …` at the root runs the
// sources instead.
import { existsSync } from 'node:fs';

const built = new URL('../dist/baton.mjs', import.meta.url);
if (!existsSync(built)) {
  process.stderr.write(
    `baton: ${built.pathname} is missing: this copy of @baton/cli was not built; run \`pnpm build\` in the repository, or \`pnpm baton …\` from its root to run the sources\n`,
  );
  process.exitCode = 1;
} else {
  const { run } = await import(built.href);
  process.exitCode = await run(process.argv.slice(2));
}
