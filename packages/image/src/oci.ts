import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { blobPath, IMAGE_USER, type ImageUser, type Layer, putBlob } from './layers.js';

/** OCI media types this build writes. */
export const MEDIA_TYPE = {
  index: 'application/vnd.oci.image.index.v1+json',
  manifest: 'application/vnd.oci.image.manifest.v1+json',
  config: 'application/vnd.oci.image.config.v1+json',
  layer: 'application/vnd.oci.image.layer.v1.tar+gzip',
  empty: 'application/vnd.oci.empty.v1+json',
  spdx: 'application/spdx+json',
} as const;

/** An OCI content descriptor. */
export interface Descriptor {
  readonly mediaType: string;
  readonly digest: string;
  readonly size: number;
  readonly artifactType?: string;
  readonly annotations?: Readonly<Record<string, string>>;
}

/** What the image runs: its entrypoint, environment, user and the ports it serves. */
export interface ImageRuntime {
  /** Empty: the pod's `command` or `args` name the program (as Argo CD's manifests do). */
  readonly entrypoint: readonly string[];
  readonly env: readonly string[];
  readonly exposedPorts: readonly number[];
  readonly labels: Readonly<Record<string, string>>;
  /** @default {@link IMAGE_USER} */
  readonly user?: ImageUser;
}

const json = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));

/**
 * The image config (no `created` field and no timestamps in its history, so it depends on content alone) and its
 * manifest, both stored as blobs. Runs as `run.user` (65532:65532 by default); /tmp is the one declared volume (an
 * emptyDir in the pod).
 */
export function imageManifest(blobDir: string, layers: readonly Layer[], run: ImageRuntime): Descriptor {
  const config = {
    architecture: 'amd64',
    os: 'linux',
    config: {
      User: `${(run.user ?? IMAGE_USER).uid}:${(run.user ?? IMAGE_USER).gid}`,
      Env: run.env,
      Entrypoint: run.entrypoint,
      WorkingDir: '/',
      ExposedPorts: Object.fromEntries(run.exposedPorts.map((p) => [`${p}/tcp`, {}])),
      Volumes: { '/tmp': {} },
      Labels: run.labels,
    },
    rootfs: { type: 'layers', diff_ids: layers.map((l) => l.diffId) },
    history: layers.map((l) => ({ created_by: l.createdBy })),
  };
  const configBlob = putBlob(blobDir, json(config));
  const manifest = {
    schemaVersion: 2,
    mediaType: MEDIA_TYPE.manifest,
    config: { mediaType: MEDIA_TYPE.config, ...configBlob },
    layers: layers.map((l) => ({ mediaType: MEDIA_TYPE.layer, digest: l.digest, size: l.size })),
    annotations: run.labels,
  };
  return { mediaType: MEDIA_TYPE.manifest, ...putBlob(blobDir, json(manifest)) };
}

/** Options of {@link referrerManifest}. */
export interface ReferrerOptions {
  /** The manifest's annotations (a signature's content and predicate type). */
  readonly annotations?: Readonly<Record<string, string>>;
  /** The file's `org.opencontainers.image.title` (the name `oras pull` saves it as). */
  readonly layerTitle?: string;
}

/** An artifact manifest carrying one file (the SBOM, a signature) whose `subject` is the image, as an OCI referrer. */
export function referrerManifest(
  blobDir: string,
  subject: Descriptor,
  file: Buffer,
  mediaType: string,
  options: ReferrerOptions = {},
): Descriptor {
  const empty = putBlob(blobDir, Buffer.from('{}'));
  const layerAnnotations = options.layerTitle
    ? { annotations: { 'org.opencontainers.image.title': options.layerTitle } }
    : {};
  const manifest = {
    schemaVersion: 2,
    mediaType: MEDIA_TYPE.manifest,
    artifactType: mediaType,
    config: { mediaType: MEDIA_TYPE.empty, ...empty },
    layers: [{ mediaType, ...putBlob(blobDir, file), ...layerAnnotations }],
    subject: { mediaType: subject.mediaType, digest: subject.digest, size: subject.size },
    ...(options.annotations ? { annotations: options.annotations } : {}),
  };
  return { mediaType: MEDIA_TYPE.manifest, artifactType: mediaType, ...putBlob(blobDir, json(manifest)) };
}

/**
 * Writes an OCI image layout at `outDir` (replacing what was there) holding `manifests` and every blob they reach,
 * copied from the blob store: `oci-layout`, `index.json`, `blobs/sha256/…`.
 */
export function writeLayout(outDir: string, blobDir: string, manifests: readonly Descriptor[], blobs: string[]): void {
  const tmp = `${outDir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(join(tmp, 'blobs', 'sha256'), { recursive: true });
  for (const digest of new Set(blobs)) copyFileSync(blobPath(blobDir, digest), blobPath(join(tmp, 'blobs'), digest));
  writeFileSync(join(tmp, 'oci-layout'), json({ imageLayoutVersion: '1.0.0' }));
  writeFileSync(join(tmp, 'index.json'), json({ schemaVersion: 2, mediaType: MEDIA_TYPE.index, manifests }));
  mkdirSync(dirname(outDir), { recursive: true });
  if (existsSync(outDir)) rmSync(outDir, { recursive: true, force: true });
  renameSync(tmp, outDir);
}

/** A manifest's own digest, its config's and its layers': the blobs a layout holding it needs. */
export function manifestBlobs(blobDir: string, d: Descriptor): string[] {
  const m = JSON.parse(readFileSync(blobPath(blobDir, d.digest), 'utf8')) as {
    config: { digest: string };
    layers: { digest: string }[];
  };
  return [d.digest, m.config.digest, ...m.layers.map((l) => l.digest)];
}

/**
 * The image of `baseLayout` (its one image manifest; referrers such as the SBOM are left behind) with `layer` on top,
 * as `FROM base@digest` + `COPY` makes it: the base's layers and runtime unchanged, its config's diff_ids and history
 * extended. The base's blobs are stored in `blobDir` beside the layer's; writes the layout at `outDir`, its image
 * tagged `tag` (`org.opencontainers.image.ref.name`).
 * @returns the new image manifest.
 * @throws Error when `baseLayout` holds no image manifest or more than one.
 */
export function extendImage(
  baseLayout: string,
  blobDir: string,
  layer: Layer,
  out: { readonly dir: string; readonly tag: string },
): Descriptor {
  const read = (digest: string) => readFileSync(blobPath(join(baseLayout, 'blobs'), digest));
  const index = JSON.parse(readFileSync(join(baseLayout, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
  const images = index.manifests.filter((d) => d.mediaType === MEDIA_TYPE.manifest && !d.artifactType);
  if (images.length !== 1)
    throw new Error(`${baseLayout}: expected one image manifest in index.json, found ${images.length}`);
  const base = JSON.parse(read(images[0]!.digest).toString()) as {
    config: Descriptor;
    layers: Descriptor[];
    annotations?: Record<string, string>;
  };
  for (const l of base.layers) putBlob(blobDir, read(l.digest));
  const config = JSON.parse(read(base.config.digest).toString()) as {
    rootfs: { diff_ids: string[] };
    history?: { created_by: string }[];
  };
  const configBlob = putBlob(
    blobDir,
    json({
      ...config,
      rootfs: { ...config.rootfs, diff_ids: [...config.rootfs.diff_ids, layer.diffId] },
      history: [...(config.history ?? []), { created_by: layer.createdBy }],
    }),
  );
  const manifest = {
    ...base,
    config: { mediaType: MEDIA_TYPE.config, ...configBlob },
    layers: [...base.layers, { mediaType: MEDIA_TYPE.layer, digest: layer.digest, size: layer.size }],
  };
  const d: Descriptor = { mediaType: MEDIA_TYPE.manifest, ...putBlob(blobDir, json(manifest)) };
  writeLayout(
    out.dir,
    blobDir,
    [{ ...d, annotations: { 'org.opencontainers.image.ref.name': out.tag } }],
    manifestBlobs(blobDir, d),
  );
  return d;
}
