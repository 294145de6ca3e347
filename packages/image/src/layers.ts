import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { fetchDeb, fetchNodeTarball, type ImageLock } from './inputs.js';
import { byteOrder, type TarEntry, treeEntries, writeTar } from './tar.js';

/** A built layer: its gzip blob in the blob store and the digests an image config and manifest name. */
export interface Layer {
  /** sha256 of the gzip blob, `sha256:…`. */
  readonly digest: string;
  /** sha256 of the uncompressed tar, `sha256:…` (the config's rootfs.diff_ids). */
  readonly diffId: string;
  readonly size: number;
  /** What the layer adds, for the config's history. */
  readonly createdBy: string;
}

/** A user of the image: its passwd and group entries, and the user an image config runs as. */
export interface ImageUser {
  readonly uid: number;
  readonly gid: number;
  readonly name: string;
  /** Its home in /etc/passwd. @default '/tmp' */
  readonly home?: string;
}

/** The user baton's images run as (distroless' "nonroot"). */
export const IMAGE_USER: ImageUser = { uid: 65532, gid: 65532, name: 'nonroot' };

// Documentation, translations and Perl (git's Perl commands: none the controller runs) are left out; every
// package's copyright file stays.
const SKIPPED =
  /^(usr\/share\/(man|info|locale|lintian|bash-completion|perl5|gitweb|bug)|usr\/lib\/git-core\/mergetools)(\/|$)/;
const isSkippedDebPath = (p: string): boolean =>
  SKIPPED.test(p) || (/^usr\/share\/doc\/[^/]+\/./.test(p) && !/^usr\/share\/doc\/[^/]+\/copyright$/.test(p));

const digestOf = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/** Where blobs live: `<cacheDir>/blobs/sha256/<hex>`, shared by every build. */
export function blobPath(blobDir: string, digest: string): string {
  return join(blobDir, 'sha256', digest.slice('sha256:'.length));
}

/** Stores a blob under its digest (written once: same digest, same bytes) and returns its descriptor fields. */
export function putBlob(blobDir: string, data: Buffer): { digest: string; size: number } {
  const digest = digestOf(data);
  const path = blobPath(blobDir, digest);
  if (!existsSync(path)) {
    mkdirSync(join(blobDir, 'sha256'), { recursive: true });
    writeFileSync(`${path}.tmp-${process.pid}`, data);
    renameSync(`${path}.tmp-${process.pid}`, path);
  }
  return { digest, size: data.length };
}

/** Options of the layer builders. */
export interface LayerOptions {
  /** Download cache (debs, npm tarballs) and blob store. */
  readonly cacheDir: string;
  /** Reuse layers built before from the same inputs and the same builder code. @default true */
  readonly reuse?: boolean;
}

/**
 * A layer built by `build` once per key (its inputs and the code of this folder's layer and tar writers): the
 * record `<cacheDir>/layers/<key>.json` names its blob.
 */
function cachedLayer(o: LayerOptions, input: unknown, createdBy: string, build: () => TarEntry[]): Layer {
  // From source (.ts) or built (.js): the writers' own code is part of the key either way.
  const ext = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
  const code = ['tar', 'layers'].map((f) => readFileSync(new URL(`${f}.${ext}`, import.meta.url))).join('\n');
  const key = createHash('sha256').update(code).update(JSON.stringify(input)).digest('hex');
  const record = join(o.cacheDir, 'layers', `${key}.json`);
  const blobDir = join(o.cacheDir, 'blobs');
  if (o.reuse !== false && existsSync(record)) {
    const layer = JSON.parse(readFileSync(record, 'utf8')) as Layer;
    if (existsSync(blobPath(blobDir, layer.digest))) return layer;
  }
  const tar = writeTar(build());
  const layer: Layer = { ...putBlob(blobDir, gzipSync(tar, { level: 6 })), diffId: digestOf(tar), createdBy };
  mkdirSync(join(o.cacheDir, 'layers'), { recursive: true });
  writeFileSync(record, `${JSON.stringify(layer)}\n`);
  return layer;
}

/**
 * The Debian layer: every locked .deb unpacked with `dpkg-deb -x` (no maintainer scripts run), less documentation,
 * plus what those scripts would have made: the CA bundle git reads (when ca-certificates is locked), and passwd/group
 * entries for root and `users` (with their homes, where not /tmp).
 */
export function debianLayer(o: LayerOptions, lock: ImageLock, users: readonly ImageUser[] = [IMAGE_USER]): Layer {
  return cachedLayer(
    o,
    { debs: lock.debs, users },
    `debian ${lock.debianRelease}: ${lock.debs.length} packages`,
    () => {
      const debs = lock.debs.map((d) => fetchDeb(d, o.cacheDir));
      const root = mkdtempSync(join(o.cacheDir, '.rootfs-'));
      try {
        for (const deb of debs) execFileSync('dpkg-deb', ['-x', deb, root]);
        const entries = treeEntries(root, '', isSkippedDebPath);
        return mergeEntries(entries, generatedFiles(root, users));
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    },
  );
}

/** Files no package carries: the CA bundle (update-ca-certificates' output), users, groups, homes and /tmp. */
function generatedFiles(root: string, users: readonly ImageUser[]): TarEntry[] {
  const file = (path: string, text: string): TarEntry => ({ type: 'file', path, mode: 0o644, data: Buffer.from(text) });
  const certDir = join(root, 'usr/share/ca-certificates/mozilla');
  const certs = existsSync(certDir)
    ? readdirSync(certDir)
        .filter((f) => f.endsWith('.crt'))
        .sort()
        .map((f) => readFileSync(join(certDir, f), 'utf8').trimEnd())
        .join('\n')
    : undefined;
  const group = users.map((u) => `${u.name}:x:${u.gid}:\n`).join('');
  const passwd = users
    .map((u) => `${u.name}:x:${u.uid}:${u.gid}:${u.name}:${u.home ?? '/tmp'}:/sbin/nologin\n`)
    .join('');
  const homes = [...new Set(users.map((u) => u.home ?? '/tmp').filter((h) => h !== '/tmp'))].flatMap((h) =>
    h
      .slice(1)
      .split('/')
      .map((_, i, parts): TarEntry => ({ type: 'dir', path: parts.slice(0, i + 1).join('/'), mode: 0o755 })),
  );
  return [
    { type: 'dir', path: 'etc', mode: 0o755 },
    file('etc/group', `root:x:0:\n${group}`),
    file('etc/passwd', `root:x:0:0:root:/root:/sbin/nologin\n${passwd}`),
    ...(certs === undefined
      ? []
      : [
          { type: 'dir', path: 'etc/ssl', mode: 0o755 } as const,
          { type: 'dir', path: 'etc/ssl/certs', mode: 0o755 } as const,
          file('etc/ssl/certs/ca-certificates.crt', `${certs}\n`),
        ]),
    ...homes,
    { type: 'dir', path: 'tmp', mode: 0o1777 },
  ];
}

/** Entries of both lists, sorted by path; `extra` wins where both have a path. */
function mergeEntries(base: readonly TarEntry[], extra: readonly TarEntry[]): TarEntry[] {
  const byPath = new Map<string, TarEntry>();
  for (const e of [...base, ...extra]) byPath.set(e.path, e);
  return [...byPath.values()].sort((a, b) => byteOrder(a.path, b.path));
}

/**
 * The Node.js layer: the official binary from the npm package, as /usr/local/bin/node, with its licence.
 * @throws Error when the lock has no `node`.
 */
export function nodeLayer(o: LayerOptions, lock: ImageLock): Layer {
  const node = lock.node;
  if (!node) throw new Error('the image lock has no `node` entry: a Node.js layer needs one');
  return cachedLayer(o, node, `node ${node.version} (npm ${node.package})`, () => {
    const tgz = fetchNodeTarball(node, o.cacheDir);
    const dir = mkdtempSync(join(o.cacheDir, '.node-'));
    try {
      execFileSync('tar', ['-xzf', tgz, '-C', dir, 'package/bin/node', 'package/LICENSE']);
      const read = (p: string) => readFileSync(join(dir, 'package', p));
      return [
        { type: 'dir', path: 'usr', mode: 0o755 },
        { type: 'dir', path: 'usr/local', mode: 0o755 },
        { type: 'dir', path: 'usr/local/bin', mode: 0o755 },
        { type: 'file', path: 'usr/local/bin/node', mode: 0o755, data: read('bin/node') },
        { type: 'dir', path: 'usr/local/share', mode: 0o755 },
        { type: 'dir', path: 'usr/local/share/doc', mode: 0o755 },
        { type: 'dir', path: 'usr/local/share/doc/node', mode: 0o755 },
        { type: 'file', path: 'usr/local/share/doc/node/LICENSE', mode: 0o644, data: read('LICENSE') },
      ];
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

/**
 * The application layer: `files` under /app (the bundle, at `app/main.mjs` for the controller), built each time (the
 * bundle changes with every source change), gzip at level 9.
 */
export function appFilesLayer(
  o: LayerOptions,
  createdBy: string,
  files: readonly { readonly path: string; readonly data: Buffer }[],
): Layer {
  const tar = writeTar(withParentDirs(files.map((f): TarEntry => ({ type: 'file', ...f, mode: 0o644 }))));
  const blob = putBlob(join(o.cacheDir, 'blobs'), gzipSync(tar, { level: 9 }));
  return { ...blob, diffId: digestOf(tar), createdBy };
}

/** `entries` with a 0755 directory for every parent path they lack, sorted by path. */
function withParentDirs(entries: readonly TarEntry[]): TarEntry[] {
  const dirs: TarEntry[] = [];
  for (const e of entries) {
    const parts = e.path.split('/');
    for (let i = 1; i < parts.length; i++) dirs.push({ type: 'dir', path: parts.slice(0, i).join('/'), mode: 0o755 });
  }
  return mergeEntries(dirs, entries);
}

/**
 * A layer of the given entries (binaries and scripts built or taken here), cached by their content. Parent
 * directories are added and everything is sorted, so the entries may come in any order.
 */
export function filesLayer(o: LayerOptions, createdBy: string, entries: readonly TarEntry[]): Layer {
  const fingerprint = entries.map((e) => ({
    ...e,
    ...(e.type === 'file' ? { data: createHash('sha256').update(e.data).digest('hex') } : {}),
  }));
  return cachedLayer(o, fingerprint, createdBy, () => withParentDirs(entries));
}
