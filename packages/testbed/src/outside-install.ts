// baton as a user installs it: the workspace's packages built, packed with `pnpm pack` (workspace:* becomes the real
// version) and `npm install`ed into a fresh directory outside the repository, third-party dependencies from the npm
// registry (npm's own cache reused). The outside-install test and `pnpm bench:pulumi` run what this installs.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../../..', import.meta.url));

interface WorkspacePackage {
  readonly name: string;
  readonly dir: string;
  readonly dependencies: Readonly<Record<string, string>>;
}

function workspacePackages(): Map<string, WorkspacePackage> {
  const all = new Map<string, WorkspacePackage>();
  for (const d of readdirSync(join(REPO, 'packages'))) {
    const dir = join(REPO, 'packages', d);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as WorkspacePackage;
    all.set(pkg.name, { name: pkg.name, dir, dependencies: pkg.dependencies ?? {} });
  }
  return all;
}

/**
 * The workspace packages `roots` need at run time: the roots and, transitively, their `workspace:` dependencies
 * (devDependencies, such as the CLI's @baton/testenv, are not installed for a user, so they are not followed).
 * @throws when a root is not a workspace package.
 */
export function runtimeClosure(roots: readonly string[]): string[] {
  const all = workspacePackages();
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name)) return;
    const pkg = all.get(name);
    if (!pkg) throw new Error(`${name} is not a package under ${join(REPO, 'packages')}`);
    seen.add(name);
    for (const [dep, range] of Object.entries(pkg.dependencies)) if (range.startsWith('workspace:')) visit(dep);
  };
  for (const r of roots) visit(r);
  return [...seen].sort();
}

/** Tarballs `pnpm pack` wrote: package name → path and size. */
export type PackedTarballs = ReadonlyMap<string, { readonly path: string; readonly bytes: number }>;

/**
 * Builds every package (`pnpm build`, incremental `tsc -b`) and packs `names` into `destDir` with `pnpm pack`.
 * @throws when the build or a pack fails (the error carries pnpm's output).
 */
export async function packPackages(names: readonly string[], destDir: string): Promise<PackedTarballs> {
  await mkdir(destDir, { recursive: true });
  await run('pnpm', ['build'], { cwd: REPO, maxBuffer: 64 * 1024 * 1024 });
  const filters = names.flatMap((n) => ['--filter', n]);
  await run('pnpm', ['-r', ...filters, 'pack', '--pack-destination', destDir], {
    cwd: REPO,
    maxBuffer: 64 * 1024 * 1024,
  });
  const all = workspacePackages();
  const packed = new Map<string, { path: string; bytes: number }>();
  for (const name of names) {
    const version = (JSON.parse(readFileSync(join(all.get(name)!.dir, 'package.json'), 'utf8')) as { version: string })
      .version;
    const path = join(destDir, `${name.replace('@', '').replace('/', '-')}-${version}.tgz`);
    packed.set(name, { path, bytes: statSync(path).size });
  }
  return packed;
}

/** Options of {@link installOutside}. */
export interface InstallOutsideOptions {
  /** The packed tarballs to install (all of them). */
  readonly tarballs: PackedTarballs;
  /** The project's package.json besides its dependencies (npm adds the tarballs). @default a private ESM package */
  readonly packageJson?: Readonly<Record<string, unknown>>;
  /** More files of the project, by path relative to it. @default {} */
  readonly files?: Readonly<Record<string, string>>;
}

/** A fresh project outside the repository with baton's packages installed by npm. */
export interface OutsideInstall {
  readonly dir: string;
  /** `npm install`'s wall time. */
  readonly installSeconds: number;
  /** `du -sk node_modules` × 1024. */
  readonly nodeModulesBytes: number;
  /** An environment for the project's commands: this process's, with no Node options, NODE_PATH or npm_* settings. */
  readonly env: NodeJS.ProcessEnv;
  /** Path of an installed bin (`node_modules/.bin/<name>`). */
  bin(name: string): string;
  /** Removes the directory. */
  remove(): Promise<void>;
}

/**
 * The environment of a user's shell: none of this process's Node options (a test runner's loaders), `NODE_PATH`
 * or pnpm's `npm_*` settings, which would let the monorepo leak into what runs.
 */
export function userEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k !== 'NODE_OPTIONS' && k !== 'NODE_PATH' && !/^npm_/i.test(k)),
  );
}

/**
 * Creates a directory under the OS temp dir (outside the repository), writes the project, and `npm install`s the
 * tarballs (npm's cache reused: `--prefer-offline`) together with the project's own dependencies.
 * @throws when npm fails (the error carries its output); the directory is removed then.
 */
export async function installOutside(o: InstallOutsideOptions): Promise<OutsideInstall> {
  const dir = await mkdtemp(join(tmpdir(), 'baton-install-'));
  const env = userEnv();
  try {
    const pkg = o.packageJson ?? { name: 'baton-user', private: true, type: 'module' };
    await writeFile(join(dir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
    for (const [path, text] of Object.entries(o.files ?? {})) {
      await mkdir(join(dir, path, '..'), { recursive: true });
      await writeFile(join(dir, path), text);
    }
    const started = performance.now();
    const tarballs = [...o.tarballs.values()].map((t) => t.path);
    await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...tarballs], {
      cwd: dir,
      env,
      maxBuffer: 64 * 1024 * 1024,
    });
    const installSeconds = (performance.now() - started) / 1000;
    const du = await run('du', ['-sk', join(dir, 'node_modules')]);
    return {
      dir,
      installSeconds,
      nodeModulesBytes: Number(du.stdout.split('\t')[0]) * 1024,
      env,
      bin: (name) => join(dir, 'node_modules', '.bin', name),
      remove: () => rm(dir, { recursive: true, force: true }),
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/** A user's Pulumi program: imports the installed @baton/pulumi and hands the cluster off from stack config. */
const PROGRAM = `import { handoffFromConfig } from '@baton/pulumi';
import * as pulumi from '@pulumi/pulumi';

export default () => handoffFromConfig(new pulumi.Config().requireSecret('kubeconfig'));
`;

/** The Pulumi project name of {@link USER_PULUMI_PROJECT_FILES}. */
export const USER_PULUMI_PROJECT = 'baton-outside';

/** A user's TypeScript Pulumi project: the program, its tsconfig and Pulumi.yaml (package.json comes from npm). */
export const USER_PULUMI_PROJECT_FILES = {
  'index.ts': PROGRAM,
  'tsconfig.json': `${JSON.stringify(
    {
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        skipLibCheck: true,
        outDir: 'dist',
      },
      include: ['index.ts'],
    },
    null,
    2,
  )}\n`,
  // Compiled with tsc, so Pulumi runs plain JavaScript: `typescript: false` turns off the host's TypeScript loader.
  'Pulumi.yaml': `name: ${USER_PULUMI_PROJECT}\nruntime:\n  name: nodejs\n  options:\n    typescript: false\n`,
};

/**
 * Installs `tarballs` into a fresh user project holding {@link USER_PULUMI_PROJECT_FILES} (with `typescript` as its own
 * devDependency) and compiles the program with the project's tsc, as a user does before `pulumi up`.
 * @throws when npm or tsc fails; the directory is removed then.
 */
export async function installUserPulumiProject(tarballs: PackedTarballs): Promise<OutsideInstall> {
  const project = await installOutside({
    tarballs,
    packageJson: {
      name: USER_PULUMI_PROJECT,
      private: true,
      type: 'module',
      main: 'dist/index.js',
      devDependencies: { typescript: '6.0.3' },
    },
    files: USER_PULUMI_PROJECT_FILES,
  });
  try {
    await run(project.bin('tsc'), ['-p', '.'], { cwd: project.dir, env: project.env });
    return project;
  } catch (err) {
    await project.remove();
    throw err;
  }
}
