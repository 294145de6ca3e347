#!/usr/bin/env node
// `baton-testenv <verb>`: the test bed's command alone, from the compiled package. `baton testenv <verb>` runs the
// same noun when @baton/testenv is installed beside @baton/cli; from the repository root, `pnpm baton testenv`.
import { runTestenvCli } from '../dist/command/index.js';

process.exitCode = await runTestenvCli(process.argv.slice(2));
