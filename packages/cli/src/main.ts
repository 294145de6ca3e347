import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ConfigError, isBatonError } from '@baton/errors';
import { Command, CommanderError } from '@commander-js/extra-typings';
import { auditCommand } from './audit/command.js';
import { revokeCommand } from './revoke/command.js';
import { statusCommand } from './status/command.js';
import { testenvCommand } from './testenv/command.js';
import { upCommand } from './up/command.js';

/** Exit codes: 0 ok; 1 failed; 2 usage or config error; 3 partial fleet failure. */
export const ExitCode = { ok: 0, failed: 1, usage: 2, partial: 3 } as const;

/** Builds the `baton` program. Each noun lives in its own folder and contributes one subcommand. */
export function buildProgram(): Command {
  const program = new Command('baton')
    .description(
      'hand a new Kubernetes cluster from push to pull, with a scoped, revoked and proven bootstrap credential',
    )
    .showHelpAfterError()
    .exitOverride();
  program.addCommand(testenvCommand());
  program.addCommand(auditCommand());
  program.addCommand(upCommand());
  program.addCommand(revokeCommand());
  program.addCommand(statusCommand());
  return program;
}

/** Runs the CLI and resolves to the process exit code. Only the CLI maps errors to exit codes. */
export async function run(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : ExitCode.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version "fail" with exit code 0.
      return err.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    }
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`baton: ${message}\n`);
    if (err instanceof ConfigError || (isBatonError(err) && err.code === 'config')) return ExitCode.usage;
    return ExitCode.failed;
  }
}

function isMain(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) {
  process.exitCode = await run(process.argv.slice(2));
}
