import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, readlink, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BuildError } from '@baton/errors';
import { ensurePulumiEngine, LANGUAGE_HOST_SCRIPT, PULUMI_VERSIONS, type PulumiEngine } from './engine.js';
import { explainPulumiError } from './pulumi-error.js';

/** Options of {@link createPulumiEnv}. */
export interface PulumiEnvOptions {
  /** Directory that holds the run's `state/` and `home/`. @default a new directory under the OS temp dir */
  readonly dir?: string;
  /** The engine to use. @default the result of `ensurePulumiEngine()` (builds on first use) */
  readonly engine?: PulumiEngine;
  /**
   * Passphrase of the stack secrets (the kubeconfig is one). Set explicitly so the CLI never prompts and never
   * reads an ambient one. @default `baton-testenv` (a test passphrase; it protects nothing real)
   */
  readonly passphrase?: string;
  /**
   * `node_modules` directories put on `NODE_PATH` for plugins the engine starts with the run's project directory
   * as their working directory. The dynamic-provider plugin (`pulumi-resource-pulumi-nodejs`) resolves
   * `@pulumi/pulumi` from there: needed when that directory is outside the package that depends on it
   * (as a temporary project dir is under pnpm's layout). @default []
   */
  readonly nodePath?: readonly string[];
  /**
   * More environment for the CLI and every plugin it starts, e.g. `NODE_OPTIONS` that let the program and the
   * dynamic-provider host load baton's packages from source. @default {}
   */
  readonly env?: Readonly<Record<string, string>>;
  /** Install the Kubernetes provider into the plugin cache (false only to test a missing plugin). @default true */
  readonly installKubernetesProvider?: boolean;
}

/** Output of one CLI run. */
export interface PulumiRunResult {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number;
}

/** Options of {@link PulumiEnv.run}. */
export interface PulumiRunOptions {
  /** Working directory (a project directory for stack commands). @default the env's `projectDir` */
  readonly cwd?: string;
  /** Kills the CLI's process group when aborted. */
  readonly signal?: AbortSignal;
  /** Stack name, for error messages. */
  readonly stack?: string;
  /**
   * Written to the CLI's stdin, then closed. Pass config values this way (`config set [--secret] KEY` reads its value
   * from stdin), never in argv: other processes can read argv, and a value may start with a dash.
   */
  readonly input?: string;
  /** Sees the CLI's output (stdout and stderr) as it comes, e.g. to show `pulumi up`'s progress while it runs. */
  readonly onOutput?: (text: string) => void;
}

/** A per-run, fully offline Pulumi setup: file backend, own PULUMI_HOME with the provider installed, no downloads. */
export interface PulumiEnv {
  /** Root directory of this environment. */
  readonly dir: string;
  /** `file://` URL of the state directory (`PULUMI_BACKEND_URL`). */
  readonly backendUrl: string;
  /** `PULUMI_HOME`: plugin cache and credentials of this run only. */
  readonly home: string;
  /** An empty directory to use as a project's work dir (`LocalWorkspace` `workDir`). */
  readonly projectDir: string;
  readonly engine: PulumiEngine;
  /** Environment for the CLI and Automation API (`LocalWorkspace` option `envVars`); holds the passphrase. */
  readonly envVars: Readonly<Record<string, string>>;
  /**
   * Runs the `pulumi` binary with this environment, in its own process group, non-interactive.
   * @throws a baton error from {@link explainPulumiError} when it exits non-zero.
   */
  run(args: readonly string[], options?: PulumiRunOptions): Promise<PulumiRunResult>;
  /** Pids of processes still running with this environment's PULUMI_HOME (the CLI and the plugins it started). */
  processes(): Promise<number[]>;
  /** Kills every process of this environment (SIGKILL, then waits until gone), then removes what it created. */
  cleanup(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

const DEFAULT_PASSPHRASE = 'baton-testenv';

/**
 * Creates a per-run Pulumi environment that never touches the network: a `file://` backend in `dir/state`,
 * `PULUMI_HOME=dir/home` whose plugin cache holds the locally built Kubernetes provider (laid out as
 * `pulumi plugin install resource kubernetes v4.25.0 -f <binary>` lays it out, linked instead of copied),
 * automatic plugin downloads, update checks and ambient plugins off, and an explicit passphrase.
 * @throws BuildError when the CLI or provider binary is missing (names the path and `pnpm baton testenv build`).
 */
export async function createPulumiEnv(options: PulumiEnvOptions = {}): Promise<PulumiEnv> {
  const engine = options.engine ?? (await ensurePulumiEngine());
  for (const [what, path] of [
    ['the pulumi CLI', engine.pulumi],
    ['the Kubernetes provider', engine.kubernetesProvider],
  ] as const) {
    if (!existsSync(path)) {
      throw new BuildError(
        `${what} is missing at ${path}: the engine is built from Go modules into baton's cache and that file is gone; run \`pnpm baton testenv build\` (or ensurePulumiEngine({ force: true })) to build it again`,
        { details: { path } },
      );
    }
  }
  const isOwnDir = options.dir === undefined;
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'baton-pulumi-')));
  const state = join(dir, 'state');
  const home = join(dir, 'home');
  const projectDir = join(dir, 'project');
  const temp = join(dir, 'tmp');
  await Promise.all([state, home, projectDir, temp].map((d) => mkdir(d, { recursive: true })));
  if (options.installKubernetesProvider ?? true) await installProvider(home, engine.kubernetesProvider);

  const envVars: Record<string, string> = {
    ...options.env,
    PULUMI_BACKEND_URL: `file://${state}`,
    PULUMI_HOME: home,
    PULUMI_CONFIG_PASSPHRASE: options.passphrase ?? DEFAULT_PASSPHRASE,
    // A missing plugin must fail at once with a clear message, not retry downloads against an unreachable host.
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: 'true',
    PULUMI_SKIP_UPDATE_CHECK: 'true',
    // Only our plugin cache counts: a pulumi-resource-kubernetes on the user's PATH would silently win otherwise.
    // Bundled plugins (pulumi-resource-pulumi-nodejs next to the CLI) are still found.
    PULUMI_IGNORE_AMBIENT_PLUGINS: 'true',
    PULUMI_SKIP_CONFIRMATIONS: 'true',
    PULUMI_DIY_BACKEND_NO_LEGACY_WARNING: 'true',
    // This checkout's language host, whatever checkout last wrote the shared shim next to the CLI.
    BATON_PULUMI_LANGUAGE_HOST: LANGUAGE_HOST_SCRIPT,
    // The Kubernetes provider (v4.25.0) copies a kubeconfig given as contents into the temp dir for Helm on every
    // configure and never removes it: credentials left in /tmp. Each environment's temp dir goes with it.
    TMPDIR: temp,
  };
  if (options.nodePath?.length) envVars.NODE_PATH = options.nodePath.join(delimiter);

  const processes = () => processesWithEnv('PULUMI_HOME', home);
  const cleanup = async () => {
    await killAll(processes);
    if (isOwnDir) await rm(dir, { recursive: true, force: true });
    else await Promise.all([state, home, projectDir, temp].map((d) => rm(d, { recursive: true, force: true })));
  };
  return {
    dir,
    backendUrl: envVars.PULUMI_BACKEND_URL!,
    home,
    projectDir,
    engine,
    envVars,
    run: (args, runOptions = {}) => runPulumi(engine.pulumi, args, envVars, { cwd: projectDir, home, ...runOptions }),
    processes,
    cleanup,
    [Symbol.asyncDispose]: cleanup,
  };
}

/** The plugin cache layout the engine reads: `plugins/resource-<name>-v<version>/pulumi-resource-<name>`. */
async function installProvider(home: string, binary: string): Promise<void> {
  const pluginDir = join(home, 'plugins', `resource-kubernetes-v${PULUMI_VERSIONS.kubernetes}`);
  const target = join(pluginDir, 'pulumi-resource-kubernetes');
  await mkdir(pluginDir, { recursive: true });
  // A symlink, not a copy: the binary is >100 MB and every test run gets a fresh PULUMI_HOME.
  if ((await readlink(target).catch(() => null)) !== binary) {
    await rm(target, { force: true });
    await symlink(binary, target);
  }
}

async function runPulumi(
  pulumi: string,
  args: readonly string[],
  envVars: Readonly<Record<string, string>>,
  options: PulumiRunOptions & { readonly cwd: string; readonly home: string },
): Promise<PulumiRunResult> {
  const argv = args.includes('--non-interactive') ? [...args] : [...args, '--non-interactive'];
  const result = await new Promise<PulumiRunResult>((resolve, reject) => {
    const child = spawn(pulumi, argv, {
      cwd: options.cwd,
      env: { ...process.env, ...envVars },
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      detached: true,
    });
    child.stdin?.end(options.input);
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      options.onOutput?.(d);
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      options.onOutput?.(d);
    });
    const onAbort = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {}
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', (err) => {
      options.signal?.removeEventListener('abort', onAbort);
      reject(err);
    });
    child.on('close', (code, signal) => {
      options.signal?.removeEventListener('abort', onAbort);
      resolve({ stdout, stderr, exitCode: code ?? (signal ? 128 : -1) });
    });
  }).catch((err: unknown) => {
    throw explainPulumiError(err, {
      operation: `${args.slice(0, 2).join(' ')}`,
      home: options.home,
      ...stackOf(options),
    });
  });
  if (result.exitCode !== 0) {
    const err = new Error(
      `pulumi ${describeArgs(args)} exited with ${result.exitCode}\n${result.stderr}\n${result.stdout}`,
    );
    throw explainPulumiError(err, { operation: args.slice(0, 2).join(' '), home: options.home, ...stackOf(options) });
  }
  return result;
}

/**
 * The command line as errors may show it: a `config set` value in argv (it may be a secret) is replaced, so a failed
 * run never prints it.
 */
export function describeArgs(args: readonly string[]): string {
  if (args[0] !== 'config' || !['set', 'set-all'].includes(args[1] ?? '')) return args.join(' ');
  // Flag names and `config set`'s key stay; every other word may be a value.
  let keyShown = args[1] !== 'set';
  const words = args.slice(2).map((w) => {
    if (/^--[a-z][a-z-]*$/.test(w)) return w;
    if (!keyShown && !w.startsWith('-')) {
      keyShown = true;
      return w;
    }
    return '<value>';
  });
  return ['config', args[1], ...words].join(' ');
}

function stackOf(options: PulumiRunOptions): { stack?: string } {
  return options.stack === undefined ? {} : { stack: options.stack };
}

/** Pids whose environment has `name=value` exactly (Linux /proc); a precise way to find one run's processes. */
async function processesWithEnv(name: string, value: string): Promise<number[]> {
  const needle = Buffer.from(`\0${name}=${value}\0`);
  const pids: number[] = [];
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const environ = await readFile(`/proc/${pid}/environ`).catch(() => null);
    if (environ && Buffer.concat([Buffer.from([0]), environ]).includes(needle)) pids.push(pid);
  }
  return pids;
}

async function killAll(list: () => Promise<number[]>): Promise<void> {
  for (let round = 0; round < 50; round++) {
    const pids = await list();
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
    // Our own exited children stay zombies until Node reaps them; give it a moment.
    await sleep(100);
  }
}
