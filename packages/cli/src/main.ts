import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ConfigError, isBatonError } from '@baton/errors';
import { Command, CommanderError } from '@commander-js/extra-typings';
import { loadTestenvCommand } from './testenv/load.js';

/** Exit codes: 0 ok; 1 failed; 2 usage or config error; 3 partial fleet failure. */
export const ExitCode = { ok: 0, failed: 1, usage: 2, partial: 3 } as const;

/**
 * The nouns, each loaded only when it runs: a noun's module pulls in its libraries (the Kubernetes client, the
 * audit log, the handoff engine), and loading every one of them cost about 1.5 s of CPU per invocation.
 * `summary` is what top-level help shows without loading the module (a unit test keeps it equal to the real one).
 */
export const NOUNS = {
  testenv: {
    summary: 'start, list and stop real local Kubernetes control planes (built from Go modules)',
    // Lives in @baton/testenv, which the CLI does not depend on at run time: a clear error names it when missing.
    load: () => loadTestenvCommand(),
  },
  init: {
    summary:
      'write a commented handoff plan to stdout, and beside it the push set rendered for your Git source and an audit key',
    load: async () => (await import('./init/command.js')).initCommand(),
  },
  plan: {
    summary:
      'show what baton up would push (objects, plan digest, credential rules, confinement) and, with a cluster, the server-side dry run and preflight, writing nothing',
    load: async () => (await import('./plan/command.js')).planCommand(),
  },
  audit: {
    summary: 'review, verify and prove the signed, tamper-evident handoff audit log',
    load: async () => (await import('./audit/command.js')).auditCommand(),
  },
  up: {
    summary:
      'hand a cluster from push to pull: scoped throwaway credential, minimal push, real takeover, revoke, proof, audit',
    load: async () => (await import('./up/command.js')).upCommand(),
  },
  revoke: {
    summary:
      'find bootstrap credentials and confinements left by earlier runs and delete them (only objects baton created)',
    load: async () => (await import('./revoke/command.js')).revokeCommand(),
  },
  status: {
    summary: 'show the handoff receipt the cluster carries (ConfigMap baton-receipt)',
    load: async () => (await import('./status/command.js')).statusCommand(),
  },
  fleet: {
    summary:
      'hand off many clusters in waves with a failure budget, in-process or as Indexed Jobs on a management cluster',
    load: async () => (await import('./fleet/command.js')).fleetCommand(),
  },
} as const satisfies Record<string, { summary: string; load: () => Promise<Parameters<Command['addCommand']>[0]> }>;

/**
 * The version of `@baton/cli` that runs, from its package.json (one directory above both `src/` and `dist/`).
 * @throws when the package.json beside the code cannot be read (a broken install).
 */
export function cliVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/**
 * Builds the `baton` program for `argv`: the noun named in it (or in `help <noun>`) is loaded in full, the others
 * appear in help by their summary. `argv` undefined loads every noun.
 */
export async function buildProgram(argv?: readonly string[]): Promise<Command> {
  const program = new Command('baton')
    .description(
      'hand a new Kubernetes cluster from push to pull, with a scoped, revoked and proven bootstrap credential',
    )
    .version(cliVersion(), '-V, --version', "print baton's version")
    .option('--no-color', 'no colour in any output, anywhere on the line (as NO_COLOR=1 does)')
    .showHelpAfterError()
    .exitOverride();
  const wanted = argv?.[0] === 'help' ? argv[1] : argv?.[0];
  for (const [name, noun] of Object.entries(NOUNS)) {
    if (argv === undefined || name === wanted) program.addCommand(withUsageExit(await noun.load()));
    else program.command(name).description(noun.summary);
  }
  return program;
}

/**
 * addCommand() does not pass the program's settings down (only .command() does): without exitOverride on every
 * command of a noun, a usage error (an unknown option) calls process.exit(1) inside commander instead of reaching
 * run()'s mapping to exit code 2.
 */
function withUsageExit<C extends Command>(cmd: C): C {
  cmd.exitOverride().showHelpAfterError();
  for (const sub of cmd.commands) withUsageExit(sub as Command);
  return cmd;
}

/** Runs the CLI and resolves to the process exit code. Only the CLI maps errors to exit codes. */
export async function run(argv: readonly string[]): Promise<number> {
  try {
    const args = withoutColorFlag(argv, process.env);
    const program = await buildProgram(args);
    await program.parseAsync([...args], { from: 'user' });
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

/**
 * `--no-color` is taken anywhere on the line, before or after the noun, as `NO_COLOR=1` (no-color.org), which every
 * view honours (the step view's listr2 too); the noun sees the rest of the line.
 */
export function withoutColorFlag(argv: readonly string[], env: NodeJS.ProcessEnv): string[] {
  const end = argv.indexOf('--');
  const flags = end < 0 ? argv : argv.slice(0, end);
  if (!flags.includes('--no-color')) return [...argv];
  env.NO_COLOR = '1';
  return [...flags.filter((a) => a !== '--no-color'), ...(end < 0 ? [] : argv.slice(end))];
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
