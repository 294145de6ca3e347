import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';

const run = promisify(execFile);

/** The repository and tag the bed's registry serves the pause image under. */
export const PAUSE_REPOSITORY = 'baton-testenv/pause';
export const PAUSE_TAG = 'bed';

/** What an image of one static binary runs. */
export interface BinaryImageSpec {
  /** The static binary (built from Go modules); it lands in /usr/local/bin. */
  readonly binary: string;
  /** `org.opencontainers.image.ref.name` in the layout's index, and the tag it is pushed under. */
  readonly ref: string;
  /** `uid:gid` the image runs as (upstream's: 65532 for distroless, 65534 for Flux). */
  readonly user: string;
  /** Arguments after the binary. @default [] */
  readonly args?: readonly string[];
  /** Extra environment. @default PATH only */
  readonly env?: readonly string[];
  /** What the image is, in its history. */
  readonly createdBy: string;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function putBlob(layout: string, data: Buffer): Promise<{ digest: string; size: number }> {
  const hex = sha256(data);
  const path = join(layout, 'blobs', 'sha256', hex);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, data);
  return { digest: `sha256:${hex}`, size: data.length };
}

/**
 * An OCI image layout holding one static binary at /usr/local/bin and nothing else (the bed's pause container,
 * Flux's controllers). Reproducible: the tar is sorted with times and owners zeroed, gzip has no timestamp, the
 * config no dates; cached beside the binary, by its name and the rest of the spec
 * (`<build>/images/<binary>-<spec digest>/<ref>`: one build may hold several binaries, as Flux's does), so a digest
 * changes exactly when the binary or the spec does.
 * @returns the layout's directory.
 */
export async function binaryImageLayout(spec: BinaryImageSpec): Promise<string> {
  const name = basename(spec.binary);
  const { binary: _, ...rest } = spec;
  const specKey = sha256(Buffer.from(JSON.stringify(rest))).slice(0, 12);
  const layout = join(dirname(dirname(spec.binary)), 'images', `${name}-${specKey}`, spec.ref);
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
      '--transform',
      `s,^,usr/local/bin/,`,
      '-cf',
      '-',
      '-C',
      dirname(spec.binary),
      name,
    ],
    { encoding: 'buffer', maxBuffer: 512 << 20 },
  );
  const layer = await putBlob(staging, gzipSync(tar, { level: 6 }));
  const config = await putBlob(
    staging,
    Buffer.from(
      JSON.stringify({
        architecture: 'amd64',
        os: 'linux',
        config: {
          User: spec.user,
          Entrypoint: [`/usr/local/bin/${name}`, ...(spec.args ?? [])],
          Env: ['PATH=/usr/local/bin:/usr/bin:/bin', ...(spec.env ?? [])],
          WorkingDir: '/',
        },
        rootfs: { type: 'layers', diff_ids: [`sha256:${sha256(tar)}`] },
        history: [{ created_by: spec.createdBy }],
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
        { mediaType: manifestType, ...manifest, annotations: { 'org.opencontainers.image.ref.name': spec.ref } },
      ],
    }),
  );
  await mkdir(dirname(layout), { recursive: true });
  await rm(layout, { recursive: true, force: true });
  await rename(staging, layout);
  return layout;
}

/** The pause container's image (upstream's runs as 65535). */
export function pauseImageLayout(pauseBinary: string): Promise<string> {
  return binaryImageLayout({
    binary: pauseBinary,
    ref: PAUSE_TAG,
    user: '65535:65535',
    createdBy: 'baton testenv: go/node-extras/pause',
  });
}

/** The manifest digest of a layout {@link binaryImageLayout} wrote. */
export async function layoutDigest(layout: string): Promise<string> {
  const index = JSON.parse(await readFile(join(layout, 'index.json'), 'utf8')) as { manifests: { digest: string }[] };
  return index.manifests[0]!.digest;
}
