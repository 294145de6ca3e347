// The demo's default path: `pulumi up` of stacks/local through the real engine and the test bed's language host.
import { randomBytes } from 'node:crypto';
import { copyFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadHandoffPlan } from '@baton/core';
import type { HandoffReceipt } from '@baton/pulumi';
import type { ControllerSide, HandoffBed } from '@baton/testenv/beds';
import { createPulumiEnv, type PulumiEnv, type PulumiEnvOptions } from '@baton/testenv/pulumi';
import { parse } from 'yaml';

const ROOT_NODE_MODULES = fileURLToPath(new URL('../../node_modules', import.meta.url));

/** A Pulumi project of stacks/local's shape (its config keys) to run `pulumi up` in. */
export interface PulumiProject {
  readonly dir: string;
  /** Its Pulumi project name (where the file backend keeps its state). */
  readonly name: string;
  /** How the engine's Node.js processes find baton's packages. */
  readonly envOptions: Pick<PulumiEnvOptions, 'nodePath' | 'env'>;
}

/** stacks/local, whose program and dynamic-provider host load baton's packages from source: the demo's project. */
export const LOCAL_STACK: PulumiProject = {
  dir: fileURLToPath(new URL('../../stacks/local', import.meta.url)),
  name: 'baton-local',
  envOptions: {
    nodePath: [ROOT_NODE_MODULES],
    env: {
      NODE_OPTIONS: `--conditions=@baton/source --import ${join(ROOT_NODE_MODULES, 'tsx', 'dist', 'loader.mjs')}`,
    },
  },
};

/**
 * stacks/local on baton's compiled packages (the `dist` that `pnpm build` writes, as npm installs them): what the tests
 * run. Loading `@baton/pulumi` from source through tsx costs about 1.2 CPU-s more in each program and dynamic-provider
 * process (2.9 against 1.7, measured 2026-12-07), and the suite starts about 70 of them.
 */
export const COMPILED_LOCAL_STACK: PulumiProject = {
  ...LOCAL_STACK,
  envOptions: { ...LOCAL_STACK.envOptions, env: { NODE_OPTIONS: '' } },
};

/** What `pulumi up` left: the stack's receipt, or the CLI's error, and where the state is. */
export interface PulumiUpResult {
  /** Absent when the update failed (a failed handoff leaves nothing in state). */
  readonly receipt?: HandoffReceipt;
  /** baton's one-paragraph error, as the CLI printed it. */
  readonly error?: string | undefined;
  readonly stack: string;
  /** When `pulumi up` started (ISO 8601, wall clock): the receipt's issuedAt minus this is Pulumi's start-up. */
  readonly startedAt: string;
  readonly updateSeconds: number;
  /** A copy of the stack's state file (secrets encrypted with a passphrase this run never printed). */
  readonly statePath: string;
  /** What `pulumi up` printed. */
  readonly logPath: string;
}

/**
 * Runs `pulumi stack init`, `config set` (values on stdin; secrets as Pulumi secrets) and `pulumi up --yes` (plus
 * `options.upArgs`) of `project` (stacks/local by default) for `bed`, copies the state into `outDir`, then removes the stack (and the
 * project's Pulumi.<stack>.yaml) and every process and file of the Pulumi environment.
 */
export async function pulumiUp(
  bed: HandoffBed<ControllerSide>,
  outDir: string,
  signal: AbortSignal,
  project: PulumiProject = LOCAL_STACK,
  options: {
    readonly upArgs?: readonly string[];
    /** Sees `pulumi up`'s output as it runs (the demo shows its progress). */
    readonly onOutput?: (text: string) => void;
  } = {},
): Promise<PulumiUpResult> {
  const stack = bed.clusterName;
  const projectDir = project.dir;
  // A fresh passphrase: the kept state's secrets stay unreadable.
  const env = await createPulumiEnv({ ...project.envOptions, passphrase: randomBytes(18).toString('base64url') });
  const run = (args: readonly string[], input?: string) =>
    env.run([...args, '--stack', stack], { cwd: projectDir, stack, signal, ...(input === undefined ? {} : { input }) });
  // `up` is not killed on abort: killing the engine would kill the provider mid-handoff, before it revokes the
  // bootstrap credential. The handoff runs to its end (revoked, proved, recorded) and the demo stops after it.
  const runUp = () =>
    env.run(['up', '--yes', ...(options.upArgs ?? []), '--stack', stack], {
      cwd: projectDir,
      stack,
      ...(options.onOutput ? { onOutput: options.onOutput } : {}),
    });
  const statePath = join(outDir, 'pulumi-state.json');
  const logPath = join(outDir, 'pulumi-up.log');
  try {
    await env.run(['stack', 'init', stack], { cwd: projectDir, stack, signal });
    await configureStack(bed, run);
    const startedAt = new Date().toISOString();
    const t0 = performance.now();
    const up = await runUp().then(
      (r) => ({ text: r.stdout + r.stderr, error: undefined }),
      (err: unknown) => ({ text: errorText(err), error: errorText(err) }),
    );
    // Hundredths: the benchmark subtracts this from baton up's wall time.
    const updateSeconds = Math.round((performance.now() - t0) / 10) / 100;
    await writeFile(logPath, up.text);
    const receipt = up.error
      ? undefined
      : (JSON.parse((await run(['stack', 'output', '--json', 'receipt'])).stdout) as HandoffReceipt);
    await copyFile(join(env.dir, 'state', '.pulumi', 'stacks', project.name, `${stack}.json`), statePath);
    return { ...(receipt ? { receipt } : { error: up.error }), stack, startedAt, updateSeconds, statePath, logPath };
  } finally {
    await removeStack(env, stack, projectDir);
  }
}

/**
 * Sets the config of a stack of stacks/local's shape (its keys, `handoffFromConfig`'s) for `bed`: plain values with
 * `config set-all`, secrets one by one on stdin.
 */
export async function configureStack(
  bed: HandoffBed<ControllerSide>,
  run: (args: readonly string[], input?: string) => Promise<unknown>,
): Promise<void> {
  const s = bed.side;
  // The bed's plan names its profile; stacks/local's `profile` config defaults to baton-controller.
  const { plan } = loadHandoffPlan(s.planPath);
  const { profile } = plan.push;
  const plain: Record<string, string> = {
    ...(profile !== 'baton-controller' ? { profile } : {}),
    clusterName: bed.clusterName,
    gitUrl: s.git.repoUrl('cluster-config'),
    gitPath: s.gitPath,
    gitRevision: s.revision,
    manifests: s.pushDir,
    pullUsername: s.git.credentials.username,
    // The controller backs off after failed pulls (up to 30 s) before it reads the pushed credential again.
    takeoverTimeoutSeconds: '150',
    auditLog: s.auditLogPath,
    signingKey: s.signingKeyPath,
    journalDir: s.journalDir,
    // How the bed's plan verifies its images (the bed's key, or Flux's keyless identity, at the bed's registry).
    images: JSON.stringify(plan.push.images),
  };
  await run(['config', 'set-all', ...Object.entries(plain).flatMap(([k, v]) => ['--plaintext', `${k}=${v}`])]);
  const secrets: Record<string, string> = {
    kubeconfig: await readFile(bed.kubeconfigPath, 'utf8'),
    pullPassword: s.git.credentials.password,
  };
  for (const [key, value] of Object.entries(secrets)) await run(['config', 'set', '--secret', key], value);
  // The plan's push-only Secrets (baton-controller's webhook key, Argo CD's argocd-redis and argocd-secret; Flux has
  // none), key by key as stacks/local's README tells a user to set them: handoffFromConfig reads `pushSecrets`.
  for (const x of plan.push.secrets) {
    const keys = parse(await readFile(x.fromFile, 'utf8')) as Record<string, string>;
    for (const [key, value] of Object.entries(keys))
      await run(
        ['config', 'set', '--secret', '--path', `pushSecrets[${JSON.stringify(x.name)}][${JSON.stringify(key)}]`],
        value,
      );
  }
}

/** Removes the stack (its state and the project's Pulumi.<stack>.yaml), then the environment's processes and files. */
async function removeStack(env: PulumiEnv, stack: string, projectDir: string): Promise<void> {
  await env
    .run(['stack', 'rm', '--yes', '--force', '--stack', stack], { cwd: projectDir, stack })
    .catch(() => undefined);
  await env.cleanup();
}

/** The messages of an error and its causes (the CLI's error carries what it printed). */
function errorText(err: unknown): string {
  let text = '';
  for (let e = err as Error | undefined; e; e = e.cause as Error | undefined) text += `${e.message}\n`;
  return text.trim();
}
