// Global setup: brings every package's compiled dist up to date (`tsc -b`, incremental: about 0.5 s when nothing
// changed) and writes the CLI's bundle (about 2 s) before any test runs, because the tests run `baton` as npm
// installs it, the package's bin on that bundle (test/support/handoff-run.ts: CLI). Either one stale would test
// yesterday's code.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const ROOT = new URL('../../', import.meta.url).pathname;

/** Entry points of the packages' dist that are missing: `tsc -b` trusts its build info and would not write them. */
function missingEntries(): string[] {
  const missing: string[] = [];
  for (const name of readdirSync(join(ROOT, 'packages'))) {
    const pkg = join(ROOT, 'packages', name, 'package.json');
    if (!existsSync(pkg)) continue;
    const exports = (JSON.parse(readFileSync(pkg, 'utf8')) as { exports?: Record<string, unknown> }).exports;
    const main = exports?.['.'] as { default?: string } | undefined;
    if (main?.default && !existsSync(join(ROOT, 'packages', name, main.default)))
      missing.push(`${name}/${main.default}`);
  }
  return missing;
}

/** Runs `node args` in the repository; on failure throws `what` with the end of its output. */
function runStep(args: readonly string[], what: string): void {
  try {
    execFileSync(process.execPath, [...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(`${what}:\n${`${e.stdout ?? ''}${e.stderr ?? ''}`.slice(-4000)}`);
  }
}

export default function buildDist(): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const tscFailed =
    "tsc -b failed, so the packages' dist (which the tests run as the installed baton) is not up to date; fix the errors below (pnpm build shows them too)";
  runStep([tsc, '-b'], tscFailed);
  if (missingEntries().length > 0) runStep([tsc, '-b', '--force'], tscFailed);
  const still = missingEntries();
  if (still.length > 0) throw new Error(`tsc -b --force wrote no ${still.join(', ')}: check the packages' tsconfig`);
  runStep(
    ['--conditions=@baton/source', '--import', 'tsx', join(ROOT, 'packages/cli/build/bundle.ts')],
    "the CLI's bundle (packages/cli/build/bundle.ts, which the tests' baton runs) failed to build",
  );
}
