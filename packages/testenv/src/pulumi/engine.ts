import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, copyFile, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ensureGoBuild, type GoBuildResult, type GoBuildSpec, goModuleDir } from '../go-build.js';
import { cacheRoot, goModulesDir } from '../paths.js';

const _execFileAsync = promisify(execFile);

/**
 * The pinned Pulumi versions. The CLI and `@pulumi/pulumi` are the same release (3.248.0 is the newest SDK that
 * runs on Node 20); the provider and `@pulumi/kubernetes` are the same release. Each binary has its own wrapper
 * module under `go/`, so Go's version selection for one never moves the other.
 */
export const PULUMI_VERSIONS = {
  /** `pulumi` CLI and engine, `github.com/pulumi/pulumi/pkg/v3`. */
  pulumi: '3.248.0',
  /** `pulumi-resource-kubernetes`, `github.com/pulumi/pulumi-kubernetes/provider/v4` at the v4.25.0 release commit. */
  kubernetes: '4.25.0',
} as const;

const PROVIDER_MODULE = 'github.com/pulumi/pulumi-kubernetes/provider/v4';

/** Where the engine's binaries are, and how they were built. */
export interface PulumiEngine {
  /** Directory with `bin/pulumi`: pass it to Automation API as `PulumiCommand.get({ root })`. */
  readonly cliRoot: string;
  /** Absolute path of the `pulumi` binary. */
  readonly pulumi: string;
  /** Absolute path of `pulumi-resource-kubernetes`. */
  readonly kubernetesProvider: string;
  /**
   * Absolute path of `pulumi-language-nodejs` next to the CLI: a shim that starts the test bed's own host
   * (`bin/pulumi-language-nodejs.mjs`), since the Go module proxy serves no version of Pulumi's. With it, a
   * `runtime: nodejs` project runs from a shell (`pulumi preview/up/refresh/destroy`).
   */
  readonly languageHost: string;
  /** The pinned versions, as `pulumi version` and the provider report them. */
  readonly versions: typeof PULUMI_VERSIONS;
  /** The two builds (CLI, provider) with their build seconds, peak RSS and binary sizes. */
  readonly builds: readonly GoBuildResult[];
}

/** Options of {@link ensurePulumiEngine}. */
export interface EnsurePulumiEngineOptions {
  /** Cache root. @default `${cacheRoot()}/testenv/bin` (shared with the control plane) */
  readonly cacheDir?: string;
  /** Progress lines for a terminal (which build runs, where its log is). */
  readonly onProgress?: (line: string) => void;
  /** Rebuild even when cached. @default false */
  readonly force?: boolean;
}

function cliSpec(): GoBuildSpec {
  return {
    name: 'pulumi',
    usualSeconds: 520,
    moduleDir: join(goModulesDir, 'pulumi'),
    packages: ['github.com/pulumi/pulumi/pkg/v3/cmd/pulumi'],
    // As upstream's release build (.goreleaser.yml): Automation API refuses a CLI whose `pulumi version` is empty.
    ldflags: [`-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v${PULUMI_VERSIONS.pulumi}`],
    tags: ['osusergo', 'grpcnotrace'],
    env: { CGO_ENABLED: '0' },
    versions: { pulumi: `v${PULUMI_VERSIONS.pulumi}` },
  };
}

function providerSpec(moduleDir: string): GoBuildSpec {
  return {
    name: 'pulumi-kubernetes',
    usualSeconds: 730,
    moduleDir,
    packages: ['baton.dev/testenv/pulumi-kubernetes'],
    outputNames: ['pulumi-resource-kubernetes'],
    // As upstream's release build (.goreleaser.yml: `version.Version={{.Tag}}`).
    ldflags: [`-X ${PROVIDER_MODULE}/pkg/version.Version=v${PULUMI_VERSIONS.kubernetes}`],
    env: { CGO_ENABLED: '0' },
    versions: { kubernetes: `v${PULUMI_VERSIONS.kubernetes}` },
  };
}

let memo: Promise<PulumiEngine> | undefined;

/**
 * Builds (once per pinned version set) or reuses the Pulumi CLI and the Kubernetes provider from the Go module
 * proxy, one after another (each `go build` already uses every core). `baton testenv build` calls this.
 * @throws BuildError when Go is missing, the proxy is unreachable or a build fails (with the build log's tail).
 */
export async function ensurePulumiEngine(options: EnsurePulumiEngineOptions = {}): Promise<PulumiEngine> {
  if (!options.force && !options.cacheDir && memo) return memo;
  const run = (async (): Promise<PulumiEngine> => {
    const cacheDir = options.cacheDir ?? join(cacheRoot(), 'testenv', 'bin');
    const opts = {
      cacheDir,
      force: options.force ?? false,
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    };
    const cli = await ensureGoBuild(cliSpec(), opts);
    await bundleDynamicProviderPlugin(cli.dir);
    const languageHost = await installLanguageHost(cli.dir);
    const providerDir = await stageProviderModule(join(cacheDir, 'src'));
    const provider = await ensureGoBuild(providerSpec(providerDir), opts);
    return {
      cliRoot: cli.dir,
      pulumi: cli.binaries.pulumi!,
      kubernetesProvider: provider.binaries['pulumi-resource-kubernetes']!,
      languageHost,
      versions: PULUMI_VERSIONS,
      builds: [cli, provider],
    };
  })();
  if (!options.cacheDir) {
    memo = run;
    // Forget a failed build so the next call retries; the caller still gets the rejection from `run`.
    run.catch(() => {
      memo = undefined;
    });
  }
  return run;
}

/** This checkout's host script; createPulumiEnv passes it to the shim as BATON_PULUMI_LANGUAGE_HOST. */
export const LANGUAGE_HOST_SCRIPT = fileURLToPath(new URL('../../bin/pulumi-language-nodejs.mjs', import.meta.url));

/**
 * Puts the `pulumi-language-nodejs` shim next to the CLI, where the engine finds a bundled language host even with
 * PULUMI_IGNORE_AMBIENT_PLUGINS set. The CLI directory is shared by every checkout using this cache, so the shim is
 * rewritten whenever it points at another checkout's script or another node.
 */
async function installLanguageHost(cliDir: string): Promise<string> {
  const target = join(cliDir, 'bin', 'pulumi-language-nodejs');
  const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  const shim = [
    '#!/bin/sh',
    "# baton's test-bed Node.js language host (@baton/testenv bin/pulumi-language-nodejs.mjs).",
    // The cache (and so this shim) is shared by every checkout; an environment names its own checkout's script.
    `exec ${quote(process.execPath)} "\${BATON_PULUMI_LANGUAGE_HOST:-${LANGUAGE_HOST_SCRIPT.replace(/[\\"$`]/g, '\\$&')}}" "$@"`,
    '',
  ].join('\n');
  if ((await readFile(target, 'utf8').catch(() => null)) === shim) return target;
  const staging = `${target}.${process.pid}.tmp`;
  await writeFile(staging, shim, { mode: 0o755 });
  await rename(staging, target);
  return target;
}

/**
 * Puts `pulumi-resource-pulumi-nodejs` (the shell script that starts `@pulumi/pulumi`'s dynamic-provider host) next to
 * the CLI, where upstream's release archive has it and where the engine looks for bundled plugins even with
 * PULUMI_IGNORE_AMBIENT_PLUGINS set. It ships in the sdk/v3 module zip of the same release.
 */
async function bundleDynamicProviderPlugin(cliDir: string): Promise<void> {
  const target = join(cliDir, 'bin', 'pulumi-resource-pulumi-nodejs');
  if (existsSync(target)) return;
  const sdkDir = await goModuleDir(join(goModulesDir, 'pulumi'), 'github.com/pulumi/pulumi/sdk/v3');
  const staging = `${target}.${process.pid}.tmp`;
  await copyFile(join(sdkDir, 'nodejs', 'dist', 'pulumi-resource-pulumi-nodejs'), staging);
  await chmod(staging, 0o755);
  await rename(staging, target);
}

/**
 * Copies our provider wrapper module (go.mod, go.sum, main.go) to a build directory and writes the two files its
 * main.go embeds, made from the schema.json and terraform-mapping.json in the provider's module zip the way
 * upstream's `go generate` makes them (schema version set, JSON compacted). The directory is named after the
 * wrapper's content, so it is made once per pin; ensureGoBuild keys on the same go.mod, go.sum and main.go.
 */
async function stageProviderModule(srcRoot: string): Promise<string> {
  const wrapperDir = join(goModulesDir, 'pulumi-kubernetes');
  const files = ['go.mod', 'go.sum', 'main.go'];
  const h = createHash('sha256');
  for (const f of files) h.update(`${f}\0`).update(await readFile(join(wrapperDir, f)));
  const dir = join(srcRoot, `pulumi-kubernetes-${h.digest('hex').slice(0, 12)}`);
  if (existsSync(join(dir, 'schema-embed.json'))) return dir;

  const staging = `${dir}.${process.pid}.tmp`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  for (const f of files) await copyFile(join(wrapperDir, f), join(staging, f));
  const moduleDir = await goModuleDir(wrapperDir, PROVIDER_MODULE);
  const cmdDir = join(moduleDir, 'cmd', 'pulumi-resource-kubernetes');
  const schema = JSON.parse(await readFile(join(cmdDir, 'schema.json'), 'utf8')) as Record<string, unknown>;
  schema.version = PULUMI_VERSIONS.kubernetes;
  await writeFile(join(staging, 'schema-embed.json'), JSON.stringify(schema));
  const mapping = JSON.parse(await readFile(join(cmdDir, 'terraform-mapping.json'), 'utf8')) as unknown;
  await writeFile(join(staging, 'terraform-mapping-embed.json'), JSON.stringify(mapping));
  // Another process may have staged the same content meanwhile; either copy is identical.
  await rm(dir, { recursive: true, force: true });
  await rename(staging, dir);
  return dir;
}
