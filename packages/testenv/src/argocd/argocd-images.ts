import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  debianLayer,
  filesLayer,
  type ImageRuntime,
  type ImageUser,
  imageManifest,
  type Layer,
  manifestBlobs,
  readLock,
  writeLayout,
} from '@baton/image';
import { withFileLock } from '../file-lock.js';
import { signBedImages } from '../image-trust.js';
import { cacheRoot } from '../paths.js';
import type { RealNodeInfo } from '../real-node-info.js';
import { ARGOCD_VERSION, type ArgoCd } from './argocd-build.js';

/** Image repositories of the workloads in `bootstrap-manifests/argocd` (the tag is the bed's too). */
export const ARGOCD_IMAGES = {
  argocd: 'quay.io/argoproj/argocd',
  redis: 'public.ecr.aws/docker/library/redis',
} as const;

/**
 * Why the bed's plans let redis through unsigned (a rule of push.images): upstream's Argo CD images are signed, the
 * Docker official redis image the install runs is not, so the bed's copy is not either.
 */
export const ARGOCD_REDIS_UNSIGNED =
  'Argo CD runs the Docker official redis image, which its publisher does not sign; pinned by digest';

/** Upstream's image user (its Dockerfile's `argocd`, uid 999) with its home. */
const ARGOCD_USER: ImageUser = { uid: 999, gid: 999, name: 'argocd', home: '/home/argocd' };
/** Upstream's redis image user (the manifests run it as 999 too). */
const REDIS_USER: ImageUser = { uid: 999, gid: 999, name: 'redis' };
/** The programs of the slim multi-call binary, as upstream's image links them in /usr/local/bin. */
const PROGRAMS = ['argocd-application-controller', 'argocd-repo-server', 'argocd-git-ask-pass'] as const;

/** An image layout this module built, and the tag it is pushed under. */
export interface BedImage {
  /** The upstream repository the manifests name, e.g. `quay.io/argoproj/argocd`. */
  readonly name: string;
  readonly tag: string;
  readonly layout: string;
  readonly digest: string;
  /** Layers' compressed bytes. */
  readonly sizeBytes: number;
}

const lockPath = (name: string) => new URL(`./${name}.lock.json`, import.meta.url).pathname;

/**
 * The layout of one image: layers from the cache under `~/.cache/baton/image` (shared with `pnpm image:build`), an
 * index naming it by `tag`. Reproducible: same inputs, same digest.
 */
function layout(name: string, tag: string, layers: Layer[], run: ImageRuntime): BedImage {
  const cacheDir = join(cacheRoot(), 'image');
  const blobDir = join(cacheDir, 'blobs');
  const image = imageManifest(blobDir, layers, run);
  // Named by its digest: a layout already written for this digest holds the same bytes.
  const out = join(cacheDir, 'bed', `${name.split('/').at(-1)}-${image.digest.slice(7, 19)}`);
  if (!existsSync(join(out, 'index.json')))
    writeLayout(
      out,
      blobDir,
      [{ ...image, annotations: { 'org.opencontainers.image.ref.name': tag } }],
      manifestBlobs(blobDir, image),
    );
  return { name, tag, layout: out, digest: image.digest, sizeBytes: layers.reduce((n, l) => n + l.size, 0) };
}

/**
 * Argo CD's image as upstream ships it, built here without a container engine: the slim multi-call binary built from
 * the pinned module with upstream's program links and `git-verify-wrapper.sh` in /usr/local/bin, on Debian's git,
 * ssh client, gpg, sh and CA bundle (locked in argocd.lock.json), running as 999 with HOME=/home/argocd. No
 * entrypoint: the manifests' `args` name the program, as they do with upstream's (which starts them under tini).
 */
function argoCdImage(argocd: ArgoCd): BedImage {
  const cacheDir = join(cacheRoot(), 'image');
  const lock = readLock(lockPath('argocd'));
  const bin = 'usr/local/bin';
  const layers = [
    debianLayer({ cacheDir }, lock, [ARGOCD_USER]),
    filesLayer({ cacheDir }, `argocd ${ARGOCD_VERSION} (controller, repo-server, askpass) built from its Go module`, [
      { type: 'file', path: `${bin}/argocd`, mode: 0o755, data: readFileSync(argocd.binary) },
      ...PROGRAMS.map((p) => ({ type: 'symlink' as const, path: `${bin}/${p}`, target: 'argocd' })),
      {
        type: 'file',
        path: `${bin}/git-verify-wrapper.sh`,
        mode: 0o755,
        data: readFileSync(join(argocd.binDir, 'git-verify-wrapper.sh')),
      },
    ]),
  ];
  return layout(ARGOCD_IMAGES.argocd, ARGOCD_VERSION, layers, {
    entrypoint: [],
    env: ['PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'HOME=/home/argocd', 'USER=argocd'],
    exposedPorts: [8080, 8081, 8082, 8083, 8084],
    labels: {
      'org.opencontainers.image.title': 'argocd (baton test bed)',
      'org.opencontainers.image.version': ARGOCD_VERSION,
    },
    user: ARGOCD_USER,
  });
}

/** Argo CD's redis: Debian's redis-server (locked in redis.lock.json), run as 999 as the manifests ask. */
function redisImage(): BedImage {
  const cacheDir = join(cacheRoot(), 'image');
  const lock = readLock(lockPath('redis'));
  const version = lock.debs.find((d) => d.name === 'redis-server')?.version ?? 'unknown';
  return layout(ARGOCD_IMAGES.redis, 'bed', [debianLayer({ cacheDir }, lock, [REDIS_USER])], {
    entrypoint: ['/usr/bin/redis-server'],
    env: ['PATH=/usr/sbin:/usr/bin:/sbin:/bin'],
    exposedPorts: [6379],
    labels: { 'org.opencontainers.image.title': 'redis (baton test bed)', 'org.opencontainers.image.version': version },
    user: REDIS_USER,
  });
}

/**
 * Builds (layers cached) Argo CD's and redis's images, one build at a time on the machine.
 * @throws Error when a locked .deb cannot be downloaded or its digest differs from the lock.
 */
export function buildArgoCdImages(argocd: ArgoCd): Promise<readonly BedImage[]> {
  // Once per process and binary: each bed would otherwise read and hash the 113 MB binary again.
  let built = memo.get(argocd.binary);
  if (!built) {
    built = withFileLock(join(cacheRoot(), 'image', 'build.lock'), async () => [argoCdImage(argocd), redisImage()]);
    memo.set(argocd.binary, built);
    built.catch(() => memo.delete(argocd.binary));
  }
  return built;
}

const memo = new Map<string, Promise<readonly BedImage[]>>();

/**
 * Pushes Argo CD's images to a bed's registry under upstream's names.
 * @returns for each upstream image name, the reference the bed's copy of the profile pins instead: same name and
 *   tag, this build's digest.
 */
export async function pushArgoCdImages(
  argocd: ArgoCd,
  realNode: RealNodeInfo,
): Promise<Readonly<Record<string, string>>> {
  const pins: Record<string, string> = {};
  for (const image of await buildArgoCdImages(argocd)) {
    const repository = image.name.slice(image.name.indexOf('/') + 1);
    // Signed as a release signs its images: the bed's plans trust the bed's key, so baton up verifies them. Redis
    // stays unsigned, as upstream's is (a rule of the plan lets it through).
    if (image.name !== ARGOCD_IMAGES.redis) await signBedImages(image.layout, image.name);
    const digest = await realNode.pushImage(image.layout, repository, image.tag);
    pins[image.name] = `${image.name}:${image.tag}@${digest}`;
  }
  return pins;
}
