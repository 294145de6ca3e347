import { execFile } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { ConfigError, ProcessError } from '@baton/errors';
import {
  type BuildSource,
  DEFAULT_CACHE_DIR,
  extendImage,
  filesLayer,
  gitBuildSource,
  type TarEntry,
  treeEntries,
} from '@baton/image';
import { withFileLock } from './file-lock.js';
import { bedImageKey, signBedImages } from './image-trust.js';
import { cacheRoot } from './paths.js';

const run = promisify(execFile);
const REPO_ROOT = new URL('../../../', import.meta.url).pathname;

/** The image baton-controller's Deployment names. */
export const CONTROLLER_IMAGE = 'ghcr.io/baton-dev/baton-controller';
/** Where `pnpm image:build` writes the layout. */
export const CONTROLLER_IMAGE_LAYOUT = join(REPO_ROOT, 'dist/images/baton-controller');

/** The controller image reference (`…@sha256:<hex>`) a manifest's text pins, if it pins one. */
export function pinnedControllerImage(manifest: string): string | undefined {
  return new RegExp(`image: (${CONTROLLER_IMAGE}@sha256:[0-9a-f]{64})`).exec(manifest)?.[1];
}

/** A build of one of baton's images: its digest, and a layout of it (signed with the bed's key) nothing rewrites. */
export interface BuiltImage {
  readonly digest: string;
  /**
   * The signed layout, frozen under `~/.cache/baton/image/signed/` by name and digest: `dist/images/` is rewritten by
   * every process's build (removed, then renamed into place), so a push reading it beside another file's build could
   * miss a blob or the signature.
   */
  readonly layout: string;
}

/**
 * Builds the controller image from these sources (`pnpm image:build`; warm, only the bundle and its small layer are
 * new), once per process and one build at a time on the machine, signs it with the bed's image key (as a release
 * would with its key), and returns its digest and frozen layout.
 * @throws ProcessError when the build fails.
 */
export const buildControllerImage = oncePerProcess(() =>
  buildSigned(
    'pnpm image:build',
    ['packages/controller/image/build.ts'],
    CONTROLLER_IMAGE_LAYOUT,
    CONTROLLER_IMAGE,
    'packages/controller/src/main.ts',
  ),
);

/** `build` run once per process (again after a failure), its result shared by every caller. */
function oncePerProcess(build: () => Promise<BuiltImage>): () => Promise<BuiltImage> {
  let built: Promise<BuiltImage> | undefined;
  return () => {
    built ??= build().catch((err) => {
      built = undefined;
      throw err;
    });
    return built;
  };
}

/**
 * Runs one of the image build scripts from these sources, signs the layout it wrote (with the SLSA provenance of
 * `entry` at this checkout's commit) and freezes it, one image build at a time on the machine (they share the layer
 * cache and `dist/images/`).
 * @throws ProcessError naming `what` with the script's stderr.
 */
async function buildSigned(
  what: string,
  args: readonly string[],
  layout: string,
  name: string,
  entry: string,
): Promise<BuiltImage> {
  return withFileLock(join(cacheRoot(), 'image', 'build.lock'), async () => {
    let digest: string;
    try {
      const { stdout } = await run(process.execPath, ['--conditions=@baton/source', '--import', 'tsx', ...args], {
        cwd: REPO_ROOT,
        maxBuffer: 1 << 20,
      });
      digest = stdout.trim().split(/\s+/).pop() ?? '';
    } catch (err) {
      throw new ProcessError(
        `${what} failed: ${String((err as { stderr?: string }).stderr ?? (err as Error).message).trim()}`,
        { cause: err },
      );
    }
    const source = buildSource();
    await signBedImages(layout, name, { entry, source });
    const signedBy = `${(await bedImageKey()).keyId.toString('hex')}-${source.commit.slice(0, 12)}${source.clean ? '' : '-dirty'}`;
    return { digest, layout: freezeLayout(layout, digest, signedBy) };
  });
}

// Read once per process: two git commands per image build added up over a suite's beds, and a test process does not
// change the checkout it runs from.
let source: BuildSource | undefined;
function buildSource(): BuildSource {
  source ??= gitBuildSource(REPO_ROOT);
  return source;
}

/**
 * A copy of `layout` that nothing rewrites, by its name, image digest, signing key and the commit its provenance names
 * (the same key signs the same digest and commit into the same bytes, so an existing copy is the same; a dirty
 * worktree's provenance says so, whatever the changes): blobs hard-linked (copied across file systems).
 */
function freezeLayout(layout: string, digest: string, signedBy: string): string {
  const dir = join(cacheRoot(), 'image', 'signed', `${basename(layout)}-${digest.replace('sha256:', '')}-${signedBy}`);
  if (existsSync(join(dir, 'index.json'))) return dir;
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(join(tmp, 'blobs', 'sha256'), { recursive: true });
  for (const f of readdirSync(join(layout, 'blobs', 'sha256'))) {
    const from = join(layout, 'blobs', 'sha256', f);
    const to = join(tmp, 'blobs', 'sha256', f);
    try {
      linkSync(from, to);
    } catch {
      copyFileSync(from, to);
    }
  }
  for (const f of ['index.json', 'oci-layout']) copyFileSync(join(layout, f), join(tmp, f));
  renameSync(tmp, dir);
  return dir;
}

/**
 * Builds the controller image, checks that `deploymentPath` pins its digest, and pushes it with `push` (a bed's
 * registry, which serves `ghcr.io/…` by digest to its node).
 * @throws ConfigError when the manifest pins another digest: rebuild and pin with `pnpm image:build --pin`.
 */
export async function pushControllerImage(
  deploymentPath: string,
  push: (layoutDir: string, repository: string, ref: string) => Promise<string>,
): Promise<string> {
  const { digest, layout } = await buildControllerImage();
  const pinned = pinnedControllerImage(readFileSync(deploymentPath, 'utf8'))?.split('@')[1];
  if (pinned !== digest)
    throw new ConfigError(
      `${deploymentPath}: pins ${CONTROLLER_IMAGE}@${pinned ?? '(no digest)'}, but these sources build ${digest}; run \`pnpm image:build --pin\` and commit the digest`,
    );
  const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'packages/controller/package.json'), 'utf8')) as {
    version: string;
  };
  return push(layout, CONTROLLER_IMAGE.slice('ghcr.io/'.length), version);
}

/** The baton CLI image's name (what the fleet's Indexed Job shards run). */
export const CLI_IMAGE = 'ghcr.io/baton-dev/baton';
/** Where the test bed writes its layout. */
export const CLI_IMAGE_LAYOUT = join(REPO_ROOT, 'dist/images/baton');

/**
 * Builds the baton CLI image from these sources into {@link CLI_IMAGE_LAYOUT} (packages/cli/image/build.ts; layers
 * cached, the bundle new), once per process and one build at a time on the machine, and returns its digest.
 * @throws ProcessError when the build fails.
 */
export const buildCliImage = oncePerProcess(() =>
  buildSigned(
    'building the baton CLI image',
    ['packages/cli/image/build.ts', '--out', CLI_IMAGE_LAYOUT],
    CLI_IMAGE_LAYOUT,
    CLI_IMAGE,
    'packages/cli/src/main.ts',
  ),
);

/**
 * Builds the baton CLI image and pushes it with `push` (a bed's registry, which serves `ghcr.io/…` to its node).
 * @returns the reference a pod names: `ghcr.io/baton-dev/baton@<digest>`.
 * @throws ProcessError when the build fails.
 */
export async function pushCliImage(
  push: (layoutDir: string, repository: string, ref: string) => Promise<string>,
): Promise<string> {
  const { layout } = await buildCliImage();
  const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'packages/cli/package.json'), 'utf8')) as {
    version: string;
  };
  const digest = await push(layout, CLI_IMAGE.slice('ghcr.io/'.length), version);
  return `${CLI_IMAGE}@${digest}`;
}

/** The repository of {@link pushShardImage}'s images. */
export const SHARD_IMAGE = 'ghcr.io/baton-dev/baton-shard';

/**
 * What a fleet's Indexed Job shards run when their plan has files: the baton CLI image, checked against the
 * reference the Job engine pins (`pinned`), with `paths` (files or folders) added at their absolute paths, readable
 * by the image's user. ADR 0008: a shard reads its plan's files (manifests, credential files) where the
 * orchestrator rendered them; this is the `FROM <pinned> + COPY` an operator builds. Pushed with `push`. Not under
 * /tmp: the image's one volume is there, and it hides the layer's files.
 * @returns `ghcr.io/baton-dev/baton-shard@<digest>`.
 * @throws ConfigError when these sources build another CLI image than `pinned`: `pnpm image:build --pin`; when a
 *   path is under /tmp.
 */
export async function pushShardImage(
  push: (layoutDir: string, repository: string, ref: string) => Promise<string>,
  pinned: string,
  paths: readonly string[],
): Promise<string> {
  const hidden = paths.find((p) => p === '/tmp' || p.startsWith('/tmp/'));
  if (hidden)
    throw new ConfigError(
      `${hidden}: the baton image mounts a volume at /tmp, which hides what an image layer puts there; keep the plan's files (push.manifests, fromFile, takeover.profile) outside /tmp`,
    );
  const { digest, layout } = await buildCliImage();
  if (pinned !== `${CLI_IMAGE}@${digest}`)
    throw new ConfigError(
      `the fleet's Job engine pins ${pinned}, but these sources build ${CLI_IMAGE}@${digest}; run \`pnpm image:build --pin\` and commit packages/fleet/job-image.json`,
    );
  const entries = paths.flatMap((p): TarEntry[] => {
    const rel = p.replace(/^\/+/, '');
    if (!statSync(p).isDirectory()) return [{ type: 'file', path: rel, mode: 0o644, data: readFileSync(p) }];
    return treeEntries(p, `${rel}/`).map((e) =>
      e.type === 'file' ? { ...e, mode: 0o644 } : e.type === 'dir' ? { ...e, mode: 0o755 } : e,
    );
  });
  const layer = filesLayer({ cacheDir: DEFAULT_CACHE_DIR }, `plan files: ${paths.join(' ')}`, entries);
  const out = mkdtempSync(join(tmpdir(), 'baton-shard-image-'));
  try {
    extendImage(layout, join(DEFAULT_CACHE_DIR, 'blobs'), layer, { dir: join(out, 'layout'), tag: 'fleet' });
    return `${SHARD_IMAGE}@${await push(join(out, 'layout'), SHARD_IMAGE.slice('ghcr.io/'.length), 'fleet')}`;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}
