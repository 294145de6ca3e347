#!/usr/bin/env node
// Runs the built CLI when it exists; otherwise runs it from source through tsx and the @baton/source condition.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const built = join(root, 'dist', 'main.js');
if (existsSync(built)) {
  const { run } = await import(built);
  process.exitCode = await run(process.argv.slice(2));
} else {
  const child = spawn(
    process.execPath,
    ['--conditions=@baton/source', '--import', 'tsx', join(root, 'src', 'main.ts'), ...process.argv.slice(2)],
    { stdio: 'inherit' },
  );
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
  child.on('exit', (code, signal) => {
    process.exitCode = code ?? (signal ? 128 : 1);
  });
}
