import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** One Debian package of the image, pinned by version and by the sha256 of its .deb. */
export interface LockedDeb {
  readonly name: string;
  readonly version: string;
  readonly arch: string;
  readonly sha256: string;
  /** Its path in the Debian archive, for the SBOM's download location. */
  readonly filename: string;
}

/** `image.lock.json`: every input the build downloads, with the digest it must have. */
export interface ImageLock {
  readonly debianRelease: string;
  /** The Node.js runtime, for images that run Node.js. */
  readonly node?: { readonly package: string; readonly version: string; readonly integrity: string };
  /** The packages the image needs (`pnpm image:lock-debs` locks their Depends closure). */
  readonly roots?: readonly string[];
  /** Dependencies the image does without, each with the reason. */
  readonly leftOut?: Readonly<Record<string, string>>;
  readonly debs: readonly LockedDeb[];
}

/** Where downloads and built layers are cached, keyed by version or digest. */
export const DEFAULT_CACHE_DIR = join(homedir(), '.cache/baton/image');

/** Reads the lock file. */
export function readLock(path: string): ImageLock {
  return JSON.parse(readFileSync(path, 'utf8')) as ImageLock;
}

const sha256File = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

/**
 * The .deb of one locked package from the cache, downloaded with `apt-get download` into it when missing; its
 * sha256 is checked either way.
 * @throws Error when apt cannot find that version, or the file's digest differs from the lock.
 */
export function fetchDeb(deb: LockedDeb, cacheDir: string): string {
  const dir = join(cacheDir, 'debs');
  const path = join(dir, `${deb.name}_${deb.version.replace(':', '%3a')}_${deb.arch}.deb`);
  if (!existsSync(path)) {
    mkdirSync(dir, { recursive: true });
    const tmp = mkdtempSync(join(dir, '.download-'));
    try {
      try {
        execFileSync('apt-get', ['download', '-qq', `${deb.name}=${deb.version}`], { cwd: tmp, stdio: 'pipe' });
      } catch (err) {
        const stderr = String((err as { stderr?: Buffer }).stderr ?? '');
        throw new Error(
          `image.lock.json: debs ${deb.name}=${deb.version}: apt-get download failed: ${stderr.trim()}; run \`apt-get update\`, or lock the version the archive has now (pnpm image:lock-debs)`,
        );
      }
      const [file] = readdirSync(tmp).filter((f) => f.endsWith('.deb'));
      if (!file) throw new Error(`image.lock.json: debs ${deb.name}=${deb.version}: apt-get download wrote no .deb`);
      renameSync(join(tmp, file), path);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  const actual = sha256File(path);
  if (actual !== deb.sha256) {
    rmSync(path, { force: true });
    throw new Error(
      `image.lock.json: debs ${deb.name}=${deb.version}: the .deb has sha256 ${actual}, the lock says ${deb.sha256}; the download was removed from the cache, build again (if it differs again, the archive changed: review and relock)`,
    );
  }
  return path;
}

/**
 * The npm tarball carrying the official Node.js Linux binary, from the cache or fetched with `npm pack` (the npm
 * registry); its integrity (sha512) is checked either way.
 * @throws Error when npm fails or the integrity differs from the lock.
 */
export function fetchNodeTarball(node: NonNullable<ImageLock['node']>, cacheDir: string): string {
  const dir = join(cacheDir, 'npm');
  const path = join(dir, `${node.package}-${node.version}.tgz`);
  if (!existsSync(path)) {
    mkdirSync(dir, { recursive: true });
    const tmp = mkdtempSync(join(dir, '.download-'));
    try {
      execFileSync('npm', ['pack', `${node.package}@${node.version}`, '--pack-destination', tmp, '--silent'], {
        stdio: 'pipe',
      });
      renameSync(join(tmp, `${node.package}-${node.version}.tgz`), path);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  const actual = `sha512-${createHash('sha512').update(readFileSync(path)).digest('base64')}`;
  if (actual !== node.integrity) {
    rmSync(path, { force: true });
    throw new Error(
      `image.lock.json: node ${node.package}@${node.version}: the tarball's integrity is ${actual}, the lock says ${node.integrity}; the download was removed from the cache, build again`,
    );
  }
  return path;
}
