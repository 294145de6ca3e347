import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

/** One entry of a layer: a directory, a regular file, a symlink, or a hard link to an earlier entry. */
export type TarEntry =
  | { readonly type: 'dir'; readonly path: string; readonly mode: number }
  | { readonly type: 'file'; readonly path: string; readonly mode: number; readonly data: Buffer }
  | { readonly type: 'symlink'; readonly path: string; readonly target: string }
  | { readonly type: 'hardlink'; readonly path: string; readonly target: string };

const BLOCK = 512;
const TYPE_FLAG = { file: '0', hardlink: '1', symlink: '2', dir: '5' } as const;

/**
 * A reproducible tar stream (POSIX ustar, with a PAX header for names longer than ustar holds): entries in the
 * order given, owner 0:0 without names, mtime 0, no device numbers. Callers sort the entries, so that the same
 * files give the same bytes wherever they were unpacked.
 */
export function writeTar(entries: readonly TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const name = e.type === 'dir' ? `${e.path}/` : e.path;
    const link = e.type === 'symlink' || e.type === 'hardlink' ? e.target : '';
    const data = e.type === 'file' ? e.data : Buffer.alloc(0);
    const pax: string[] = [];
    if (Buffer.byteLength(name) > 100) pax.push(paxRecord('path', name));
    if (Buffer.byteLength(link) > 100) pax.push(paxRecord('linkpath', link));
    if (pax.length > 0) {
      const body = Buffer.from(pax.join(''));
      parts.push(header({ name: 'PaxHeader', mode: 0o644, size: body.length, type: 'x', link: '' }), pad(body));
    }
    const mode = e.type === 'symlink' || e.type === 'hardlink' ? 0o777 : e.mode;
    parts.push(header({ name, mode, size: data.length, type: TYPE_FLAG[e.type], link }), pad(data));
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return Buffer.concat(parts);
}

/** A PAX record: its own length in decimal, counted with itself. */
function paxRecord(key: string, value: string): string {
  const rest = ` ${key}=${value}\n`;
  let len = Buffer.byteLength(rest) + 1;
  while (String(len).length + Buffer.byteLength(rest) !== len) len++;
  return `${len}${rest}`;
}

function header(h: { name: string; mode: number; size: number; type: string; link: string }): Buffer {
  const b = Buffer.alloc(BLOCK);
  b.write(truncate(h.name, 100), 0, 'utf8');
  b.write(octal(h.mode & 0o7777, 8), 100, 'ascii');
  b.write(octal(0, 8), 108, 'ascii');
  b.write(octal(0, 8), 116, 'ascii');
  b.write(octal(h.size, 12), 124, 'ascii');
  b.write(octal(0, 12), 136, 'ascii');
  b.write(h.type, 156, 'ascii');
  b.write(truncate(h.link, 100), 157, 'utf8');
  b.write('ustar\u000000', 257, 'ascii');
  b.write('        ', 148, 'ascii');
  let sum = 0;
  for (const byte of b) sum += byte;
  b.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 'ascii');
  return b;
}

/** The first bytes of a name that fit a ustar field (the PAX record carries the whole name). */
function truncate(s: string, bytes: number): string {
  const buf = Buffer.from(s);
  return buf.length <= bytes ? s : buf.subarray(0, bytes).toString('latin1');
}

function octal(n: number, width: number): string {
  return `${n.toString(8).padStart(width - 1, '0')}\u0000`;
}

function pad(data: Buffer): Buffer {
  const rem = data.length % BLOCK;
  return rem === 0 ? data : Buffer.concat([data, Buffer.alloc(BLOCK - rem)]);
}

/**
 * The entries of a directory tree, sorted by path (bytewise), with `prefix` before each path. A file with more
 * than one link becomes a hard link to the first path (in that order) that had it, as dpkg unpacks git's builtins.
 * @param skip paths (relative to `root`) left out with everything below them
 */
export function treeEntries(root: string, prefix = '', skip: (path: string) => boolean = () => false): TarEntry[] {
  const found: string[] = [];
  const walk = (rel: string): void => {
    for (const n of readdirSync(join(root, rel))) {
      const p = rel ? `${rel}/${n}` : n;
      if (skip(p)) continue;
      found.push(p);
      if (lstatSync(join(root, p)).isDirectory()) walk(p);
    }
  };
  walk('');
  found.sort(byteOrder);
  const seen = new Map<string, string>();
  return found.flatMap((p): TarEntry[] => {
    const abs = join(root, p);
    const st = lstatSync(abs);
    const path = `${prefix}${p}`;
    if (st.isDirectory()) return [{ type: 'dir', path, mode: st.mode }];
    if (st.isSymbolicLink()) return [{ type: 'symlink', path, target: readlinkSync(abs) }];
    if (!st.isFile()) return [];
    const key = `${st.dev}:${st.ino}`;
    const first = st.nlink > 1 ? seen.get(key) : undefined;
    if (first) return [{ type: 'hardlink', path, target: first }];
    if (st.nlink > 1) seen.set(key, path);
    return [{ type: 'file', path, mode: st.mode, data: readFileSync(abs) }];
  });
}

/** Bytewise order of paths, the same under every locale. */
export function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
