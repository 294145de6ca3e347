/** An image reference, split the way a registry is asked for it. */
export interface ImageRef {
  /** The reference as written in the manifest. */
  readonly text: string;
  /** The registry host as written (`ghcr.io`, `10.0.0.1:5000`; `docker.io` when none is written). */
  readonly registry: string;
  /** The repository in that registry (`library/redis` for Docker Hub's `redis`). */
  readonly repository: string;
  readonly tag?: string;
  /** `sha256:<hex>` when pinned by digest. */
  readonly digest?: string;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;
const REPOSITORY = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/**
 * Parses `[registry/]repository[:tag][@sha256:hex]` as the container runtime does: the first path component is a
 * registry when it has a `.` or `:` or is `localhost`; otherwise the image is Docker Hub's (`library/` for one name).
 * @returns the reference, or a string saying what is wrong with it.
 */
export function parseImageRef(text: string): ImageRef | string {
  const at = text.indexOf('@');
  const digest = at >= 0 ? text.slice(at + 1) : undefined;
  if (digest !== undefined && !DIGEST.test(digest)) return `the digest "${digest}" is not sha256:<64 hex digits>`;
  const named = at >= 0 ? text.slice(0, at) : text;
  const slash = named.indexOf('/');
  const first = slash >= 0 ? named.slice(0, slash) : '';
  const hasRegistry = slash >= 0 && (first.includes('.') || first.includes(':') || first === 'localhost');
  const registry = hasRegistry ? first : 'docker.io';
  let rest = hasRegistry ? named.slice(slash + 1) : named;
  const colon = rest.lastIndexOf(':');
  const tag = colon >= 0 ? rest.slice(colon + 1) : undefined;
  if (colon >= 0) rest = rest.slice(0, colon);
  if (tag !== undefined && !TAG.test(tag)) return `the tag "${tag}" is not a valid tag`;
  const repository = registry === 'docker.io' && !rest.includes('/') ? `library/${rest}` : rest;
  if (!REPOSITORY.test(repository)) return `"${rest}" is not a valid repository name`;
  return { text, registry, repository, ...(tag ? { tag } : {}), ...(digest ? { digest } : {}) };
}

/** The registry's API host: Docker Hub's is not its name. */
export function registryApiHost(registry: string): string {
  return registry === 'docker.io' ? 'registry-1.docker.io' : registry;
}
