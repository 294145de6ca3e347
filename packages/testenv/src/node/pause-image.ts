import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';

const run = promisify(execFile);

/** The repository and tag the bed's registry serves the pause image under. */
export const PAUSE_REPOSITORY = 'baton-testenv/pause';
export const PAUSE_TAG = 'bed';

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function putBlob(layout: string, data: Buffer): Promise<{ digest: string; size: number }> {
  const hex = sha256(data);
  const path = join(layout, 'blobs', 'sha256', hex);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, data);
  return { digest: `sha256:${hex}`, size: data.length };
}

/**
 * An OCI image layout holding the pause container: one layer with the static `pause` binary (built from
 * `go/node-extras`), run as 65535 as upstream's is. Reproducible (tar sorted, times and owners zeroed, gzip without
 * a timestamp) and cached beside the binary, so its digest changes exactly when the binary does.
 */
export async function pauseImageLayout(pauseBinary: string): Promise<string> {
  const layout = join(dirname(dirname(pauseBinary)), 'pause-image');
  if (existsSync(join(layout, 'index.json'))) return layout;
  const staging = `${layout}.partial-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  const { stdout: tar } = await run(
    'tar',
    [
      '--sort=name',
      '--mtime=@0',
      '--owner=0',
      '--group=0',
      '--numeric-owner',
      '--mode=0755',
      '-cf',
      '-',
      '-C',
      dirname(pauseBinary),
      'pause',
    ],
    { encoding: 'buffer', maxBuffer: 64 << 20 },
  );
  const layer = await putBlob(staging, gzipSync(tar, { level: 9 }));
  const config = await putBlob(
    staging,
    Buffer.from(
      JSON.stringify({
        architecture: 'amd64',
        os: 'linux',
        config: { User: '65535:65535', Entrypoint: ['/pause'], WorkingDir: '/' },
        rootfs: { type: 'layers', diff_ids: [`sha256:${sha256(tar)}`] },
        history: [{ created_by: 'baton testenv: go/node-extras/pause' }],
      }),
    ),
  );
  const manifestType = 'application/vnd.oci.image.manifest.v1+json';
  const manifest = await putBlob(
    staging,
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: manifestType,
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
        layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', ...layer }],
      }),
    ),
  );
  await writeFile(join(staging, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}');
  await writeFile(
    join(staging, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [
        { mediaType: manifestType, ...manifest, annotations: { 'org.opencontainers.image.ref.name': PAUSE_TAG } },
      ],
    }),
  );
  await rm(layout, { recursive: true, force: true });
  await rename(staging, layout);
  return layout;
}

/** The manifest digest of a layout {@link pauseImageLayout} wrote. */
export async function pauseImageDigest(layout: string): Promise<string> {
  const index = JSON.parse(await readFile(join(layout, 'index.json'), 'utf8')) as { manifests: { digest: string }[] };
  return index.manifests[0]!.digest;
}
