import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { withFileLock } from './file-lock.js';
import { MANIFEST_ACCEPT } from './registry.js';

const run = promisify(execFile);

/** What a pulled image runs, from its config. */
export interface ImageConfig {
  readonly User?: string;
  readonly Env?: readonly string[];
  readonly Entrypoint?: readonly string[];
  readonly Cmd?: readonly string[];
  readonly WorkingDir?: string;
}

/** An image unpacked by manifest digest. */
export interface PulledImage {
  readonly digest: string;
  /** The unpacked root filesystem (shared, read-only to its users: they bind-mount it read-only). */
  readonly rootfs: string;
  readonly config: ImageConfig;
}

/** A pull that failed as a kubelet's would (`ErrImagePull`), with the message a kubelet would report. */
export class ImagePullError extends Error {
  readonly reason = 'ErrImagePull';
}

/** `registry/repository@sha256:…` split into its parts; undefined unless pinned by digest. */
export function parseDigestReference(image: string): { host: string; repository: string; digest: string } | undefined {
  const m = /^([^/]+)\/(.+)@(sha256:[0-9a-f]{64})$/.exec(image);
  return m ? { host: m[1]!, repository: m[2]!, digest: m[3]! } : undefined;
}

const sha256 = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/**
 * Pulls `repository@digest` from a registry over HTTP and unpacks its layers in order into
 * `<cacheDir>/<digest hex>` (once per digest; concurrent pulls of one digest wait on a file lock). The manifest,
 * config and every layer must have the digest that names them.
 * @throws ImagePullError when the registry does not have it or a digest does not match.
 */
export async function pullImage(o: {
  readonly registry: string;
  readonly repository: string;
  readonly digest: string;
  readonly cacheDir: string;
}): Promise<PulledImage> {
  const ref = `${o.registry}/${o.repository}@${o.digest}`;
  const base = `http://${o.registry}/v2/${o.repository}`;
  const get = async (path: string, accept?: string): Promise<Buffer> => {
    let res: Response;
    try {
      res = await fetch(`${base}/${path}`, accept ? { headers: { accept } } : {});
    } catch (err) {
      throw new ImagePullError(`failed to pull image "${ref}": ${(err as Error).message}`);
    }
    if (res.status === 404) throw new ImagePullError(`failed to pull image "${ref}": ${path}: not found`);
    if (!res.ok) throw new ImagePullError(`failed to pull image "${ref}": ${path}: HTTP ${res.status}`);
    return Buffer.from(await res.arrayBuffer());
  };
  const verified = async (digest: string, path: string, accept?: string): Promise<Buffer> => {
    const body = await get(path, accept);
    const actual = sha256(body);
    if (actual !== digest)
      throw new ImagePullError(`failed to pull image "${ref}": ${path} has digest ${actual}, expected ${digest}`);
    return body;
  };
  const manifest = JSON.parse((await verified(o.digest, `manifests/${o.digest}`, MANIFEST_ACCEPT)).toString()) as {
    config: { digest: string };
    layers: { digest: string; mediaType: string }[];
  };
  const config = JSON.parse((await verified(manifest.config.digest, `blobs/${manifest.config.digest}`)).toString()) as {
    config?: ImageConfig;
  };
  const rootfs = join(o.cacheDir, o.digest.slice('sha256:'.length));
  await mkdir(o.cacheDir, { recursive: true });
  await withFileLock(`${rootfs}.lock`, async () => {
    if (existsSync(rootfs)) return;
    const tmp = `${rootfs}.partial`;
    await rm(tmp, { recursive: true, force: true });
    await mkdir(tmp);
    for (const layer of manifest.layers) {
      const file = `${tmp}.layer`;
      await writeFile(file, await verified(layer.digest, `blobs/${layer.digest}`));
      const gz = layer.mediaType.endsWith('+gzip') || layer.mediaType.endsWith('.tar.gzip');
      await run('tar', [gz ? '-xzf' : '-xf', file, '-C', tmp, '--numeric-owner']);
      await rm(file);
    }
    await rename(tmp, rootfs);
  });
  return { digest: o.digest, rootfs, config: config.config ?? {} };
}
