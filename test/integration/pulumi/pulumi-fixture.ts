import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  createPulumiEnv,
  ensurePulumiEngine,
  type PulumiEnv,
  type PulumiEnvOptions,
  type PulumiRunResult,
} from '@baton/testenv/pulumi';
import * as k8s from '@kubernetes/client-node';
import { LocalWorkspace, PulumiCommand, type PulumiFn, type Stack } from '@pulumi/pulumi/automation/index.js';

/** Root node_modules: where `@pulumi/pulumi` is for the dynamic-provider plugin started in a temp project dir. */
export const rootNodeModules = new URL('../../../node_modules', import.meta.url).pathname;

/**
 * A per-file Pulumi environment on the real engine (built or reused from baton's cache). Its programs and
 * dynamic-provider hosts load baton's compiled packages (dist, as npm installs them; the tests' global setup builds
 * them), not the sources: from source through tsx, each of those processes spent about 1.2 CPU-s more.
 */
export async function pulumiEnv(options: Omit<PulumiEnvOptions, 'engine'> = {}): Promise<PulumiEnv> {
  const engine = await ensurePulumiEngine();
  return createPulumiEnv({
    nodePath: [rootNodeModules],
    ...options,
    env: { NODE_OPTIONS: '', ...options.env },
    engine,
  });
}

/** Options of {@link inlineStack}. */
export interface InlineStackOptions {
  readonly stackName: string;
  readonly program: PulumiFn;
  /** @default 'baton-test' */
  readonly projectName?: string;
  /** Project directory. @default env.projectDir */
  readonly workDir?: string;
  /** Overrides of the environment (e.g. another passphrase). */
  readonly envVars?: Readonly<Record<string, string>>;
}

/** An Automation API stack of an inline program, run by our `pulumi` binary in `env`. */
export async function inlineStack(env: PulumiEnv, options: InlineStackOptions): Promise<Stack> {
  const pulumiCommand = await PulumiCommand.get({ root: env.engine.cliRoot });
  const projectName = options.projectName ?? 'baton-test';
  return LocalWorkspace.createOrSelectStack(
    { stackName: options.stackName, projectName, program: options.program },
    {
      workDir: options.workDir ?? env.projectDir,
      pulumiCommand,
      envVars: { ...env.envVars, ...options.envVars },
      projectSettings: { name: projectName, runtime: 'nodejs', backend: { url: env.backendUrl } },
    },
  );
}

/**
 * The stack's state file as the file backend stores it (secrets as ciphertext), unlike Automation API's
 * `exportStack()`, which decrypts them (`--show-secrets`).
 */
export async function storedState(env: PulumiEnv, projectName: string, stackName: string): Promise<string> {
  return readFile(join(env.dir, 'state', '.pulumi', 'stacks', projectName, `${stackName}.json`), 'utf8');
}

/** Reads a kubeconfig file; the text goes only into Pulumi secrets, never into output. */
export async function kubeconfigText(path: string): Promise<string> {
  return readFile(path, 'utf8');
}

/** Admin API clients for assertions. */
export function kubeClients(kubeconfigPath: string) {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  return { kc, core: kc.makeApiClient(k8s.CoreV1Api), apps: kc.makeApiClient(k8s.AppsV1Api) };
}

/** True when the API server answers 404 for the read. */
export async function isGone(read: () => Promise<unknown>): Promise<boolean> {
  try {
    await read();
    return false;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return true;
    throw err;
  }
}

/**
 * The `pulumi` CLI of one stack in one stack directory, from a shell as a user runs it: `run` (stdin as `input`,
 * so config values never reach argv) and `runFailing` (for a command that must fail: everything it printed).
 * Every output goes to `printed`, for the secret grep.
 */
export function stackCli(env: PulumiEnv, stackDir: string, stack: string, printed: string[]) {
  const run = async (args: readonly string[], input?: string): Promise<PulumiRunResult> => {
    const r = await env.run([...args, '--stack', stack], {
      cwd: stackDir,
      stack,
      ...(input === undefined ? {} : { input }),
    });
    printed.push(r.stdout, r.stderr);
    return r;
  };
  const runFailing = async (args: readonly string[]): Promise<string> => {
    const text = await run(args).then(
      () => undefined,
      (err: unknown) => {
        let t = '';
        for (let e = err as Error | undefined; e; e = e.cause as Error | undefined) t += `${e.message}\n`;
        return t;
      },
    );
    if (text === undefined) throw new Error(`pulumi ${args.join(' ')} succeeded; it was expected to fail`);
    printed.push(text);
    return text;
  };
  return { run, runFailing };
}
