import { createHash } from 'node:crypto';
import { type ImageRef, registryApiHost } from './image-ref.js';

/** How baton reaches registries, with the operator's network access. */
export interface RegistryAccess {
  /**
   * Where to read a registry host's images instead of `https://<host>` (a mirror in the cluster's network; `http://`
   * is allowed: a signature is verified end to end, so the transport adds only availability).
   */
  readonly mirrors?: Readonly<Record<string, string>>;
  /** @default globalThis.fetch */
  readonly fetch?: typeof fetch;
  /** Per request. @default 15000 */
  readonly timeoutMs?: number;
}

/** An OCI content descriptor as a registry lists it. */
export interface RegistryDescriptor {
  readonly mediaType: string;
  readonly digest: string;
  readonly size: number;
  readonly artifactType?: string;
  readonly annotations?: Readonly<Record<string, string>>;
}

/** A registry answered in a way baton cannot use, or could not be reached; the message says which and where. */
export class RegistryError extends Error {
  override readonly name = 'RegistryError';
}

const INDEX = 'application/vnd.oci.image.index.v1+json';
const MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
/** Signatures and their listings are small; a registry sending more is refused rather than read. */
const MAX_JSON_BYTES = 4 << 20;

/**
 * Reads an image's referrers (OCI 1.1 referrers API, or the referrers tag schema where the registry has no such API),
 * their manifests and blobs, checking every digest. Anonymous bearer tokens are fetched when a registry asks for
 * them (public images on ghcr.io, Docker Hub, quay.io).
 */
export class RegistryClient {
  readonly #mirrors: Readonly<Record<string, string>>;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;
  readonly #tokens = new Map<string, string>();

  constructor(access: RegistryAccess = {}) {
    this.#mirrors = access.mirrors ?? {};
    this.#fetch = access.fetch ?? globalThis.fetch;
    this.#timeoutMs = access.timeoutMs ?? 15_000;
  }

  /** The base URL baton reads `ref`'s registry at (`https://ghcr.io`, or its mirror). */
  baseOf(ref: ImageRef): string {
    return (this.#mirrors[ref.registry] ?? `https://${registryApiHost(ref.registry)}`).replace(/\/+$/, '');
  }

  /**
   * The manifests whose subject is `digest` (of `artifactType`, when given): the referrers API, or, when the registry
   * answers 404 there, the `sha256-<hex>` tag; none when neither exists.
   * @throws {RegistryError} when the registry cannot be reached or answers otherwise.
   */
  async referrers(ref: ImageRef, digest: string, artifactType?: string): Promise<RegistryDescriptor[]> {
    const filter = artifactType ? `?artifactType=${encodeURIComponent(artifactType)}` : '';
    let res = await this.#get(ref, `referrers/${digest}${filter}`, INDEX);
    if (res.status === 404) res = await this.#get(ref, `manifests/${digest.replace(':', '-')}`, INDEX);
    if (res.status === 404) return [];
    const index = (await this.#json(ref, res, 'the referrers of the image')) as { manifests?: RegistryDescriptor[] };
    const all = Array.isArray(index.manifests) ? index.manifests : [];
    return artifactType ? all.filter((d) => d.artifactType === artifactType) : all;
  }

  /**
   * The image manifest `digest` of `ref`'s repository, parsed, its bytes checked against the digest.
   * @throws {RegistryError} when it is missing, too large or not what its digest says.
   */
  async manifest(ref: ImageRef, digest: string): Promise<unknown> {
    const res = await this.#get(ref, `manifests/${digest}`, MANIFEST);
    return JSON.parse((await this.#checked(ref, res, digest, `manifest ${digest}`)).toString('utf8'));
  }

  /**
   * The blob `digest` of `ref`'s repository, its bytes checked against the digest.
   * @throws {RegistryError} when it is missing, too large or not what its digest says.
   */
  async blob(ref: ImageRef, digest: string): Promise<Buffer> {
    return this.#checked(ref, await this.#get(ref, `blobs/${digest}`, '*/*'), digest, `blob ${digest}`);
  }

  async #checked(ref: ImageRef, res: Response, digest: string, what: string): Promise<Buffer> {
    const bytes = await this.#bytes(ref, res, what);
    const got = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
    if (got !== digest) throw new RegistryError(`${this.baseOf(ref)} served ${what} with the digest ${got}`);
    return bytes;
  }

  async #json(ref: ImageRef, res: Response, what: string): Promise<unknown> {
    const bytes = await this.#bytes(ref, res, what);
    try {
      return JSON.parse(bytes.toString('utf8'));
    } catch {
      throw new RegistryError(`${this.baseOf(ref)} served ${what} as something other than JSON`);
    }
  }

  async #bytes(ref: ImageRef, res: Response, what: string): Promise<Buffer> {
    if (!res.ok) {
      await res.body?.cancel();
      throw new RegistryError(`${this.baseOf(ref)} answered ${res.status} for ${what} of ${ref.repository}`);
    }
    const length = Number(res.headers.get('content-length') ?? 0);
    if (length > MAX_JSON_BYTES) {
      await res.body?.cancel();
      throw new RegistryError(`${this.baseOf(ref)} served ${what} of ${length} bytes, more than baton reads`);
    }
    const bytes = Buffer.from(await res.arrayBuffer());
    if (bytes.length > MAX_JSON_BYTES)
      throw new RegistryError(`${this.baseOf(ref)} served ${what} of ${bytes.length} bytes, more than baton reads`);
    return bytes;
  }

  /** GET `/v2/<repository>/<path>`, with the repository's bearer token when the registry asks for one. */
  async #get(ref: ImageRef, path: string, accept: string): Promise<Response> {
    const url = `${this.baseOf(ref)}/v2/${ref.repository}/${path}`;
    const key = `${this.baseOf(ref)} ${ref.repository}`;
    const send = (token?: string) =>
      this.#send(url, { accept, ...(token ? { authorization: `Bearer ${token}` } : {}) });
    let res = await send(this.#tokens.get(key));
    if (res.status !== 401) return res;
    const challenge = res.headers.get('www-authenticate') ?? '';
    await res.body?.cancel();
    const token = await this.#anonymousToken(challenge, ref);
    this.#tokens.set(key, token);
    res = await send(token);
    return res;
  }

  async #send(url: string, headers: Record<string, string>): Promise<Response> {
    try {
      return await this.#fetch(url, { headers, signal: AbortSignal.timeout(this.#timeoutMs) });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (err as Error).message;
      throw new RegistryError(`cannot reach ${new URL(url).origin}: ${why}`, { cause: err });
    }
  }

  /** An anonymous pull token from the realm a `Bearer` challenge names. */
  async #anonymousToken(challenge: string, ref: ImageRef): Promise<string> {
    const params = Object.fromEntries(
      [...challenge.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!.toLowerCase(), m[2]!] as const),
    );
    if (!/^bearer\s/i.test(challenge) || !params.realm)
      throw new RegistryError(
        `${this.baseOf(ref)} requires credentials to read ${ref.repository} (${challenge.split(' ')[0] || 'no challenge'}); baton reads signatures anonymously: mirror the image and its signatures where the operator can read them (push.images.mirrors)`,
      );
    const url = new URL(params.realm);
    if (params.service) url.searchParams.set('service', params.service);
    url.searchParams.set('scope', params.scope ?? `repository:${ref.repository}:pull`);
    const res = await this.#send(url.toString(), { accept: 'application/json' });
    const body = (await this.#json(ref, res, 'an anonymous token')) as { token?: string; access_token?: string };
    const token = body.token ?? body.access_token;
    if (!token) throw new RegistryError(`${url.origin} gave no anonymous token for ${ref.repository}`);
    return token;
  }
}
