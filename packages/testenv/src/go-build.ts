import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BuildError } from '@baton/errors';
import { withFileLock } from './file-lock.js';
import { tailFile } from './tail.js';

const execFileAsync = promisify(execFile);

/** One Go wrapper module and the main packages built from it in a single `go build`. */
export interface GoBuildSpec {
  /** Short name used in the cache path and in messages, e.g. `kube`. */
  readonly name: string;
  /** Directory of the wrapper module (holds go.mod and go.sum). */
  readonly moduleDir: string;
  /** Main packages to build; binaries are named after the last path element. */
  readonly packages: readonly string[];
  /** Output names, when they must differ from the last path element (same order as `packages`). */
  readonly outputNames?: readonly string[];
  /** `-ldflags` (version stamps); `-s -w` is always added. */
  readonly ldflags?: readonly string[];
  /** Build tags. */
  readonly tags?: readonly string[];
  /** Extra environment, e.g. `{ CGO_ENABLED: '0' }`. */
  readonly env?: Readonly<Record<string, string>>;
  /** Pinned versions recorded with the build, e.g. `{ kubernetes: 'v1.36.3' }`. */
  readonly versions: Readonly<Record<string, string>>;
  /**
   * How long a cold build usually takes on 2 cores (measured here, Go module downloads included), shown next to the
   * elapsed time while it runs so a long wait is not mistaken for a hang. @default unknown (elapsed time only)
   */
  readonly usualSeconds?: number;
  /** Called after the build with the module directory resolved, to copy data files next to the binaries. */
  readonly afterBuild?: (ctx: { readonly outDir: string; readonly goEnv: NodeJS.ProcessEnv }) => Promise<void>;
}

/** What a finished (or reused) build produced. */
export interface GoBuildResult {
  readonly name: string;
  /** Directory of the cache entry; binaries are in `${dir}/bin`. */
  readonly dir: string;
  /** Absolute path of each binary by name. */
  readonly binaries: Readonly<Record<string, string>>;
  /** Size of each binary in bytes. */
  readonly sizes: Readonly<Record<string, number>>;
  /** False when the cache already held this exact build. */
  readonly built: boolean;
  /** Seconds the `go build` took when it ran (cold or warm Go cache), else the figure recorded when it did. */
  readonly buildSeconds: number;
  /** Peak RSS of the go build in MB, as recorded when it ran (null when unknown). */
  readonly buildPeakRssMB: number | null;
  /** CPU seconds (user + system) of that build, children included: comparable across machine load. */
  readonly buildCpuSeconds: number | null;
  readonly versions: Readonly<Record<string, string>>;
  readonly goVersion: string;
}

interface BuildInfo {
  readonly buildSeconds: number;
  readonly buildPeakRssMB: number | null;
  readonly buildCpuSeconds?: number | null;
  readonly builtAt: string;
  readonly goVersion: string;
  readonly versions: Record<string, string>;
  readonly binaries: Record<string, number>;
}

/** Options of {@link ensureGoBuild}. */
export interface EnsureGoBuildOptions {
  /** Cache root; entries go to `${cacheDir}/${name}-${hash}`. */
  readonly cacheDir: string;
  /** Progress lines (which build, where its log is, and while it runs, its elapsed time against the usual). */
  readonly onProgress?: (line: string) => void;
  /** Milliseconds between elapsed-time lines while a build runs. @default 30000 */
  readonly progressIntervalMs?: number;
  /** Rebuild even when the cache holds the entry. @default false */
  readonly force?: boolean;
}

/** The name `go build -o dir/` gives a main package: its last path element, skipping a major-version suffix. */
function naturalName(pkg: string): string {
  const parts = pkg.split('/');
  const last = parts.at(-1)!;
  return /^v\d+$/.test(last) && parts.length > 1 ? parts.at(-2)! : last;
}

function outputName(spec: GoBuildSpec, i: number): string {
  return spec.outputNames?.[i] ?? naturalName(spec.packages[i]!);
}

/** Resolves `go version`, or explains how to install Go. @throws BuildError when Go is missing. */
export async function goVersion(env?: NodeJS.ProcessEnv): Promise<string> {
  try {
    const { stdout } = await execFileAsync('go', ['env', 'GOVERSION'], env ? { env } : {});
    return stdout.trim();
  } catch (err) {
    throw new BuildError(
      'go was not found on PATH: the local control plane and the Pulumi engine are built from Go modules; install Go 1.26 (https://go.dev/dl, or /usr/local/go/bin on PATH) and run the command again',
      { cause: err },
    );
  }
}

/**
 * Builds the binaries of one wrapper module into a content-addressed cache entry, or reuses it.
 * The key covers go.mod, go.sum, every .go file of the wrapper (subfolders too), flags, tags and the Go version,
 * so a rebuild happens exactly when a pin changes. Concurrent callers wait on a lock.
 * @throws BuildError naming the module, the command and the last lines of the build log.
 */
export async function ensureGoBuild(spec: GoBuildSpec, options: EnsureGoBuildOptions): Promise<GoBuildResult> {
  // A spec may choose its toolchain (`GOTOOLCHAIN=go1.27.3` for Argo CD alone): every other build stays `local`.
  const goEnv = { ...process.env, GOTOOLCHAIN: 'local', ...spec.env, GOFLAGS: '-buildvcs=false' };
  const gover = await goVersion(goEnv);
  const key = await buildKey(spec, gover);
  const dir = join(options.cacheDir, `${spec.name}-${key}`);
  const binDir = join(dir, 'bin');
  const infoPath = join(dir, 'build.json');
  await mkdir(options.cacheDir, { recursive: true });

  return withFileLock(`${dir}.lock`, async () => {
    if (!options.force && existsSync(infoPath)) {
      const info = JSON.parse(await readFile(infoPath, 'utf8')) as BuildInfo;
      if (await binariesPresent(spec, binDir)) return toResult(spec, dir, info, false);
    }
    const staging = `${dir}.partial`;
    await rm(staging, { recursive: true, force: true });
    await mkdir(join(staging, 'bin'), { recursive: true });
    const logPath = join(options.cacheDir, `${spec.name}-${key}.build.log`);
    const usual = spec.usualSeconds === undefined ? '' : `, usually about ${clockTime(spec.usualSeconds)} on 2 cores`;
    options.onProgress?.(
      `building ${spec.name} (${Object.entries(spec.versions)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}${usual}); log: ${logPath}`,
    );

    const args = [
      'build',
      '-trimpath',
      '-mod=readonly',
      `-ldflags=${['-s', '-w', ...(spec.ldflags ?? [])].join(' ')}`,
      ...(spec.tags?.length ? [`-tags=${spec.tags.join(',')}`] : []),
      '-o',
      `${join(staging, 'bin')}/`,
      ...spec.packages,
    ];
    const started = performance.now();
    const ticker = options.onProgress
      ? setInterval(
          () => options.onProgress?.(elapsedLine(spec, started, logPath)),
          options.progressIntervalMs ?? 30_000,
        )
      : undefined;
    const usage = await runLogged('go', args, { cwd: spec.moduleDir, env: goEnv, logPath, what: spec.name }).finally(
      () => clearInterval(ticker),
    );
    const buildSeconds = round((performance.now() - started) / 1000);

    // Several packages with one -o dir name binaries after their package dir; rename where asked.
    for (let i = 0; i < spec.packages.length; i++) {
      const natural = naturalName(spec.packages[i]!);
      const wanted = outputName(spec, i);
      if (natural !== wanted) await rename(join(staging, 'bin', natural), join(staging, 'bin', wanted));
    }
    await spec.afterBuild?.({ outDir: staging, goEnv: { ...goEnv } });

    const binaries: Record<string, number> = {};
    for (let i = 0; i < spec.packages.length; i++) {
      const name = outputName(spec, i);
      binaries[name] = (await stat(join(staging, 'bin', name))).size;
    }
    const info: BuildInfo = {
      buildSeconds,
      buildPeakRssMB: usage === null ? null : Math.round(usage.peakRssKB / 1024),
      buildCpuSeconds: usage === null ? null : round(usage.cpuSeconds),
      builtAt: new Date().toISOString(),
      goVersion: gover,
      versions: { ...spec.versions },
      binaries,
    };
    await writeFile(join(staging, 'build.json'), `${JSON.stringify(info, null, 2)}\n`);
    await rm(dir, { recursive: true, force: true });
    await rename(staging, dir);
    options.onProgress?.(`built ${spec.name} in ${buildSeconds} s`);
    return toResult(spec, dir, info, true);
  });
}

/** `building kube: 4:05 elapsed, usually about 12:28 on 2 cores; log: …` (says so once past the usual). */
function elapsedLine(spec: GoBuildSpec, startedMs: number, logPath: string): string {
  const elapsed = (performance.now() - startedMs) / 1000;
  const usual =
    spec.usualSeconds === undefined
      ? ''
      : elapsed > spec.usualSeconds
        ? `, longer than the usual ${clockTime(spec.usualSeconds)} on 2 cores (still building)`
        : `, usually about ${clockTime(spec.usualSeconds)} on 2 cores`;
  return `building ${spec.name}: ${clockTime(elapsed)} elapsed${usual}; log: ${logPath}`;
}

/** Seconds as m:ss. */
function clockTime(seconds: number): string {
  const s = Math.round(seconds);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

async function binariesPresent(spec: GoBuildSpec, binDir: string): Promise<boolean> {
  for (let i = 0; i < spec.packages.length; i++) {
    if (!existsSync(join(binDir, outputName(spec, i)))) return false;
  }
  return true;
}

function toResult(spec: GoBuildSpec, dir: string, info: BuildInfo, built: boolean): GoBuildResult {
  const binaries: Record<string, string> = {};
  for (let i = 0; i < spec.packages.length; i++) {
    const name = outputName(spec, i);
    binaries[name] = join(dir, 'bin', name);
  }
  return {
    name: spec.name,
    dir,
    binaries,
    sizes: info.binaries,
    built,
    buildSeconds: info.buildSeconds,
    buildPeakRssMB: info.buildPeakRssMB,
    buildCpuSeconds: info.buildCpuSeconds ?? null,
    versions: info.versions,
    goVersion: info.goVersion,
  };
}

async function buildKey(spec: GoBuildSpec, gover: string): Promise<string> {
  const h = createHash('sha256');
  const { readdir } = await import('node:fs/promises');
  // Main packages may live in subfolders of the wrapper (go/node-extras/pause): their sources count too.
  const files = (await readdir(spec.moduleDir, { recursive: true }))
    .filter((f) => f === 'go.mod' || f === 'go.sum' || f.endsWith('.go'))
    .sort();
  for (const f of files) {
    h.update(`${f}\0`);
    h.update(await readFile(join(spec.moduleDir, f)));
  }
  h.update(
    JSON.stringify([gover, spec.packages, spec.outputNames ?? [], spec.ldflags ?? [], spec.tags ?? [], spec.env ?? {}]),
  );
  return h.digest('hex').slice(0, 12);
}

/**
 * Runs a command with output to a log file, in its own process group, and resolves to its peak RSS in KB and
 * CPU seconds (children included, from /usr/bin/time when present).
 */
async function runLogged(
  cmd: string,
  args: readonly string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; logPath: string; what: string },
): Promise<{ peakRssKB: number; cpuSeconds: number } | null> {
  const log = await open(opts.logPath, 'w');
  const timeBin = existsSync('/usr/bin/time') ? '/usr/bin/time' : null;
  const rssFile = `${opts.logPath}.rss`;
  const [file, argv] = timeBin ? [timeBin, ['-f', '%M %U %S', '-o', rssFile, cmd, ...args]] : [cmd, [...args]];
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(file, argv, {
        cwd: opts.cwd,
        env: opts.env,
        stdio: ['ignore', log.fd, log.fd],
        detached: true,
      });
      const forward = (sig: NodeJS.Signals) => {
        try {
          process.kill(-child.pid!, sig);
        } catch {}
      };
      const onSig = () => forward('SIGTERM');
      process.once('SIGINT', onSig);
      process.once('SIGTERM', onSig);
      child.on('error', reject);
      child.on('exit', (c) => {
        process.off('SIGINT', onSig);
        process.off('SIGTERM', onSig);
        resolve(c);
      });
    });
    if (code !== 0) {
      const tail = await tailFile(opts.logPath, 25);
      throw new BuildError(
        `building ${opts.what} failed: \`${cmd} ${args.join(' ')}\` in ${opts.cwd} exited with ${code}; last lines of ${opts.logPath}:\n${tail}\nfix: check that the Go module proxy is reachable (GOPROXY) and that Go is 1.26 or newer; rerun \`pnpm baton testenv build\``,
        { details: { module: opts.what, logPath: opts.logPath, exitCode: code } },
      );
    }
    if (!timeBin) return null;
    const [kb, user, sys] = ((await readFile(rssFile, 'utf8')).trim().split('\n').at(-1) ?? '').split(' ').map(Number);
    return kb !== undefined && Number.isFinite(kb) ? { peakRssKB: kb, cpuSeconds: (user ?? 0) + (sys ?? 0) } : null;
  } finally {
    await log.close();
  }
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}

/**
 * Downloads `module` at the version `wrapperDir`'s go.mod selects and resolves its directory in the module cache
 * (upstream files a build needs beside the binary: a plugin script, CRDs, a schema).
 * @throws BuildError naming the module, the wrapper and the command that retries.
 */
export async function goModuleDir(
  wrapperDir: string,
  module: string,
  options: { readonly env?: NodeJS.ProcessEnv; readonly retry?: string } = {},
): Promise<string> {
  try {
    const { stdout } = await execFileAsync('go', ['mod', 'download', '-json', module], {
      cwd: wrapperDir,
      env: options.env ?? { ...process.env, GOFLAGS: '-mod=readonly', GOTOOLCHAIN: 'local' },
      maxBuffer: 1 << 20,
    });
    const info = JSON.parse(stdout) as { Dir?: string; Error?: string };
    if (!info.Dir) throw new Error(info.Error ?? 'no directory reported');
    return info.Dir;
  } catch (err) {
    throw new BuildError(
      `downloading ${module} (as pinned in ${wrapperDir}/go.mod) failed: ${(err as Error).message.split('\n')[0]}; check that the Go module proxy is reachable (GOPROXY) and rerun \`${options.retry ?? 'pnpm baton testenv build'}\``,
      { cause: err, details: { module } },
    );
  }
}
