import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTempDirs } from '../../../../test/support/temp-dirs.js';
import { binaryImageLayout, layoutDigest } from './binary-image.js';

const tempDir = useTempDirs();

/** A copy of /bin/true as a build's `bin/<name>`, at a fresh path (so nothing is cached). */
function binaryAt(name: string): string {
  const dir = tempDir('binary-image-');
  mkdirSync(join(dir, 'bin'));
  copyFileSync('/bin/true', join(dir, 'bin', name));
  return join(dir, 'bin', name);
}

describe('binaryImageLayout', () => {
  it('is reproducible: the same binary and spec give the same digest at another path and time', async () => {
    const spec = { ref: 'v1', user: '65534:65534', createdBy: 'test' };
    const a = await layoutDigest(await binaryImageLayout({ ...spec, binary: binaryAt('tool') }));
    const b = await layoutDigest(await binaryImageLayout({ ...spec, binary: binaryAt('tool') }));
    expect(a).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(b).toBe(a);
    const other = await layoutDigest(
      await binaryImageLayout({ ...spec, user: '65532:65532', binary: binaryAt('tool') }),
    );
    expect(other).not.toBe(a);
  });

  it('keeps one image per binary of a build: two binaries built together, same tag, are two images', async () => {
    // Flux's controllers come from one `go build`: both binaries sit in one bin/ and share the release tag.
    const source = binaryAt('source-controller');
    const kustomize = join(source, '..', 'kustomize-controller');
    copyFileSync('/bin/false', kustomize);
    const spec = { ref: 'v1.9.6', user: '65534:65534', createdBy: 'test' };
    const a = await binaryImageLayout({ ...spec, binary: source });
    const b = await binaryImageLayout({ ...spec, binary: kustomize });
    expect(b).not.toBe(a);
    expect(await layoutDigest(b)).not.toBe(await layoutDigest(a));
    const entrypoint = (layout: string) => {
      const blob = (d: string) => JSON.parse(readFileSync(join(layout, 'blobs/sha256', d.slice(7)), 'utf8'));
      return blob(blob(JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')).manifests[0].digest).config.digest)
        .config.Entrypoint;
    };
    expect(entrypoint(b)).toEqual(['/usr/local/bin/kustomize-controller']);
    // The spec is part of the cache key: another user beside the cached layout is another image.
    const other = await binaryImageLayout({ ...spec, user: '65532:65532', binary: kustomize });
    expect(await layoutDigest(other)).not.toBe(await layoutDigest(b));
  });

  it('runs the binary from /usr/local/bin as the given user', async () => {
    const layout = await binaryImageLayout({
      binary: binaryAt('pause'),
      ref: 'bed',
      user: '65535:65535',
      createdBy: 't',
    });
    const blob = (d: string) => JSON.parse(readFileSync(join(layout, 'blobs/sha256', d.slice(7)), 'utf8'));
    const manifest = blob(await layoutDigest(layout));
    const config = blob(manifest.config.digest);
    expect(config.config).toMatchObject({ User: '65535:65535', Entrypoint: ['/usr/local/bin/pause'] });
    expect(config.created).toBeUndefined();
  });
});
