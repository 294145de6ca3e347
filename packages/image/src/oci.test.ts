import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { blobPath, filesLayer } from './layers.js';
import { extendImage, imageManifest, MEDIA_TYPE, manifestBlobs, referrerManifest, writeLayout } from './oci.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'baton-oci-'));
  dirs.push(d);
  return d;
};
const file = (path: string, text: string) => ({ type: 'file' as const, path, mode: 0o644, data: Buffer.from(text) });
const blob = (layout: string, digest: string) =>
  JSON.parse(readFileSync(blobPath(join(layout, 'blobs'), digest), 'utf8'));

describe('extendImage', () => {
  it('puts a layer on the base image and keeps its layers and runtime; the SBOM referrer stays behind', () => {
    const cacheDir = tmp();
    const blobs = join(cacheDir, 'blobs');
    const a = filesLayer({ cacheDir }, 'app', [file('app/main.js', 'x')]);
    const runtime = { entrypoint: ['/bin/app'], env: ['A=1'], exposedPorts: [], labels: { title: 'base' } };
    const base = imageManifest(blobs, [a], runtime);
    const sbom = referrerManifest(blobs, base, Buffer.from('{}'), MEDIA_TYPE.spdx);
    const baseLayout = join(tmp(), 'base');
    writeLayout(
      baseLayout,
      blobs,
      [base, sbom],
      [base.digest, sbom.digest, ...manifestBlobs(blobs, sbom).slice(1), ...manifestBlobs(blobs, base).slice(1)],
    );

    const other = tmp();
    const extra = filesLayer({ cacheDir: other }, 'plan files', [file('work/plan.yaml', 'kind: HandoffPlan')]);
    const out = join(tmp(), 'derived');
    const d = extendImage(baseLayout, join(other, 'blobs'), extra, { dir: out, tag: 'fleet' });

    const index = JSON.parse(readFileSync(join(out, 'index.json'), 'utf8')) as { manifests: { digest: string }[] };
    expect(index.manifests).toEqual([{ ...d, annotations: { 'org.opencontainers.image.ref.name': 'fleet' } }]);
    const m = blob(out, d.digest);
    expect(m.layers.map((l: { digest: string }) => l.digest)).toEqual([a.digest, extra.digest]);
    expect(m.annotations).toEqual({ title: 'base' });
    const config = blob(out, m.config.digest);
    expect(config.rootfs.diff_ids).toEqual([a.diffId, extra.diffId]);
    expect(config.history).toEqual([{ created_by: 'app' }, { created_by: 'plan files' }]);
    expect(config.config).toMatchObject({ Entrypoint: ['/bin/app'], Env: ['A=1'], User: '65532:65532' });
    // Same inputs, same digest.
    expect(extendImage(baseLayout, join(other, 'blobs'), extra, { dir: join(tmp(), 'again'), tag: 'x' }).digest).toBe(
      d.digest,
    );
  });

  it('refuses a layout without exactly one image', () => {
    const cacheDir = tmp();
    const blobs = join(cacheDir, 'blobs');
    const empty = join(tmp(), 'empty');
    writeLayout(empty, blobs, [], []);
    const layer = filesLayer({ cacheDir }, 'x', [file('x', 'x')]);
    expect(() => extendImage(empty, blobs, layer, { dir: join(tmp(), 'out'), tag: 'x' })).toThrow(
      /expected one image manifest.*found 0/,
    );
  });
});
