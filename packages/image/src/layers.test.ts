import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { blobPath, filesLayer } from './layers.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const cacheDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'baton-image-'));
  dirs.push(d);
  return d;
};

/** Entry names of an uncompressed ustar stream, in order. */
function names(tar: Buffer): string[] {
  const out: string[] = [];
  for (let off = 0; off + 512 <= tar.length; ) {
    const name = tar
      .subarray(off, off + 100)
      .toString()
      .replace(/\0.*$/s, '');
    if (!name) break;
    const size = Number.parseInt(
      tar
        .subarray(off + 124, off + 136)
        .toString()
        .replace(/\0.*$/s, '')
        .trim() || '0',
      8,
    );
    out.push(name);
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

describe('filesLayer', () => {
  const entries = [
    { type: 'symlink' as const, path: 'usr/local/bin/b', target: 'a' },
    { type: 'file' as const, path: 'usr/local/bin/a', mode: 0o755, data: Buffer.from('#!/bin/sh\n') },
  ];

  it('adds parent directories, sorts, and gives the same digest from another cache', () => {
    const first = filesLayer({ cacheDir: cacheDir() }, 'test', entries);
    const second = filesLayer({ cacheDir: cacheDir() }, 'test', [...entries].reverse());
    expect(second.digest).toBe(first.digest);
    const dir = dirs[0]!;
    const tar = gunzipSync(readFileSync(blobPath(join(dir, 'blobs'), first.digest)));
    expect(names(tar)).toEqual(['usr/', 'usr/local/', 'usr/local/bin/', 'usr/local/bin/a', 'usr/local/bin/b']);
  });

  it('changes the digest when a file changes', () => {
    const a = filesLayer({ cacheDir: cacheDir() }, 'test', entries);
    const changed = [entries[0]!, { ...entries[1]!, data: Buffer.from('#!/bin/sh\nexit 1\n') }];
    expect(filesLayer({ cacheDir: cacheDir() }, 'test', changed).digest).not.toBe(a.digest);
  });
});
