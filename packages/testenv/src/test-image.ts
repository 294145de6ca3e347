import { join } from 'node:path';
import { type Descriptor, filesLayer, imageManifest, manifestBlobs, writeLayout } from '@baton/image';

/** A one-layer image written as an OCI layout, for tests and benchmarks of what reads images and their signatures. */
export interface TestImage {
  /** The layout directory (its image tagged `tag`). */
  readonly layout: string;
  readonly image: Descriptor;
}

/**
 * Writes a one-layer image whose only file (`/app`) holds `content` to `dir/<tag>` as an OCI layout tagged `tag`; its
 * blobs are kept in `dir/cache-<tag>`. Other content, other digest; the same content, the same digest.
 */
export function writeTestImage(dir: string, tag: string, content: string): TestImage {
  const cacheDir = join(dir, `cache-${tag}`);
  const blobs = join(cacheDir, 'blobs');
  const data = Buffer.from(content);
  const layer = filesLayer({ cacheDir }, tag, [{ type: 'file', path: 'app', mode: 0o644, data }]);
  const image = imageManifest(blobs, [layer], { entrypoint: ['/app'], env: [], exposedPorts: [], labels: {} });
  const layout = join(dir, tag);
  const tagged = { ...image, annotations: { 'org.opencontainers.image.ref.name': tag } };
  writeLayout(layout, blobs, [tagged], manifestBlobs(blobs, image));
  return { layout, image };
}
