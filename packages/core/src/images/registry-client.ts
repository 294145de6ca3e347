import { createHash } from 'node:crypto';
import { type ImageRef, registryApiHost } from './image-ref.js';
import type { FoundLogin, RegistryCredentials } from './registry-credentials.js';

/** How baton reaches registries, with the operator's network access. */
export interface RegistryAccess {
  /**
   * Where to read a registry host's images instead of `https://<host>` (a mirror in the cluster's network; `http://`
   * is allowed: a signature is verified end to end, so the transport adds only availability).
   */
  readonly mirrors?: Readonly<Record<string, string>>;
  /** The operator's registry logins (a Docker config); without them every read is anonymous. */
  readonly credentials?: RegistryCredentials;
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
const DOCKER_MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json';
/** Signatures and their listings are small; a registry sending more is refused rather than read. */
const MAX_JSON_BYTES = 4 << 20;

/**
 * Reads an image's referrers (OCI 1.1 referrers API, or the referrers tag schema where the registry has no such API),
 * their manifests and blobs, checking every digest. When a registry asks, it answers with the operator's login for
 * that host (Basic, or at a bearer token realm), or anonymously without one (public images on ghcr.io, Docker Hub,
 * quay.io). A login is never sent over plain http to anything but loopback.
 */
export class RegistryClient {
  readonly #mirrors: Readonly<Record<string, string>>;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;
  readonly #credentials: RegistryCredentials | undefined;
  /** `Bearer <token>` or `Basic <…>` per registry base and repository, once a challenge was answered. */
  readonly #authorizations = new Map<string, string>();

  constructor(access: RegistryAccess = {}) {
    this.#credentials = access.credentials;
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
   * The layers of the image's cosign v2 signature manifest (the `sha256-<hex>.sig` tag, where cosign before v3 puts
   * signatures), with their annotations; none when there is no such tag. The tag is not content-addressed: what
   * vouches for a layer is its signature, checked by the caller.
   * @throws {RegistryError} when the registry cannot be reached or answers otherwise.
   */
  async cosignV2Signatures(ref: ImageRef, digest: string): Promise<RegistryDescriptor[]> {
    const res = await this.#get(ref, `manifests/${digest.replace(':', '-')}.sig`, `${MANIFEST}, ${DOCKER_MANIFEST}`);
    if (res.status === 404) return [];
    const manifest = (await this.#json(ref, res, 'the cosign signature manifest')) as { layers?: RegistryDescriptor[] };
    return Array.isArray(manifest.layers) ? manifest.layers : [];
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

  /** GET `/v2/<repository>/<path>`, answering the registry's challenge once per repository. */
  async #get(ref: ImageRef, path: string, accept: string): Promise<Response> {
    const url = `${this.baseOf(ref)}/v2/${ref.repository}/${path}`;
    const key = `${this.baseOf(ref)} ${ref.repository}`;
    const send = (authorization?: string) => this.#send(url, { accept, ...(authorization ? { authorization } : {}) });
    let res = await send(this.#authorizations.get(key));
    if (res.status !== 401) return res;
    const challenge = res.headers.get('www-authenticate') ?? '';
    await res.body?.cancel();
    const found = await this.#login(ref);
    const authorization = await this.#answer(challenge, ref, found);
    this.#authorizations.set(key, authorization);
    res = await send(authorization);
    if (res.status === 401) {
      await res.body?.cancel();
      throw new RegistryError(
        found
          ? `${this.baseOf(ref)} refused the login from ${found.source} for ${ref.repository} (401); check it (\`docker login ${new URL(this.baseOf(ref)).host}\`)`
          : `${this.baseOf(ref)} refused an anonymous token for ${ref.repository} (401); ${this.#howToLogIn(ref)}`,
      );
    }
    return res;
  }

  /** The operator's login for the host baton reads `ref` at (its mirror's, when mirrored), if any. */
  async #login(ref: ImageRef): Promise<FoundLogin | undefined> {
    if (!this.#credentials) return undefined;
    const base = new URL(this.baseOf(ref));
    const found = await this.#credentials.find(base.host);
    if (found && base.protocol === 'http:' && !isLoopback(base.hostname))
      throw new RegistryError(
        `${base.origin} is read over http, and baton does not send the login from ${found.source} in the clear; name an https mirror (push.images.mirrors), or remove the login for ${base.host}`,
      );
    return found;
  }

  /** The Authorization that answers `challenge`: Basic with the login, or a bearer token from the named realm. */
  async #answer(challenge: string, ref: ImageRef, found: FoundLogin | undefined): Promise<string> {
    const scheme = challenge.split(' ')[0]?.toLowerCase() ?? '';
    if (scheme === 'basic' && found?.login.kind === 'basic')
      return `Basic ${Buffer.from(`${found.login.username}:${found.login.password}`).toString('base64')}`;
    if (scheme === 'bearer') return `Bearer ${await this.#token(challenge, ref, found)}`;
    throw new RegistryError(
      `${this.baseOf(ref)} requires credentials to read ${ref.repository} (${challenge.split(' ')[0] || 'no challenge'}); ${this.#howToLogIn(ref)}`,
    );
  }

  #howToLogIn(ref: ImageRef): string {
    const host = new URL(this.baseOf(ref)).host;
    return this.#credentials
      ? `baton found no login for ${host} in ${this.#credentials.file}: run \`docker login ${host}\`, or name a Docker config (push.images.credentials)`
      : `baton reads it anonymously here: mirror the image and its signatures where the operator can read them (push.images.mirrors)`;
  }

  /** GET `url` with `headers`, or POST `form`. */
  async #send(url: string, headers: Record<string, string>, form?: URLSearchParams): Promise<Response> {
    try {
      return await this.#fetch(url, {
        headers,
        signal: AbortSignal.timeout(this.#timeoutMs),
        ...(form ? { method: 'POST', body: form } : {}),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (err as Error).message;
      throw new RegistryError(`cannot reach ${new URL(url).origin}: ${why}`, { cause: err });
    }
  }

  /**
   * A pull token from the realm a `Bearer` challenge names: with the login (Basic, or an identity token exchanged as
   * an OAuth2 refresh token), else anonymous.
   */
  async #token(challenge: string, ref: ImageRef, found: FoundLogin | undefined): Promise<string> {
    const params = Object.fromEntries(
      [...challenge.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!.toLowerCase(), m[2]!] as const),
    );
    if (!params.realm)
      throw new RegistryError(`${this.baseOf(ref)} asked for a bearer token without naming a realm to get it from`);
    const url = new URL(params.realm);
    if (found && url.protocol === 'http:' && !isLoopback(url.hostname))
      throw new RegistryError(
        `${this.baseOf(ref)} sends logins to ${url.origin} over http; baton does not send the login from ${found.source} in the clear`,
      );
    const scope = params.scope ?? `repository:${ref.repository}:pull`;
    let res: Response;
    if (found?.login.kind === 'identity-token') {
      const form = new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: found.login.token,
        service: params.service ?? '',
        scope,
        client_id: 'baton',
      });
      res = await this.#send(url.toString(), { accept: 'application/json' }, form);
    } else {
      if (params.service) url.searchParams.set('service', params.service);
      url.searchParams.set('scope', scope);
      const basic =
        found?.login.kind === 'basic'
          ? {
              authorization: `Basic ${Buffer.from(`${found.login.username}:${found.login.password}`).toString('base64')}`,
            }
          : {};
      res = await this.#send(url.toString(), { accept: 'application/json', ...basic });
    }
    const what = found ? `a token for the login from ${found.source}` : 'an anonymous token';
    if (res.status === 401 || res.status === 403) {
      await res.body?.cancel();
      throw new RegistryError(
        found
          ? `${url.origin} refused the login from ${found.source} for ${ref.repository} (${res.status}); check it (\`docker login ${new URL(this.baseOf(ref)).host}\`)`
          : `${url.origin} gives no anonymous token for ${ref.repository} (${res.status}); ${this.#howToLogIn(ref)}`,
      );
    }
    const body = (await this.#json(ref, res, what)) as { token?: string; access_token?: string };
    const token = body.token ?? body.access_token;
    if (!token) throw new RegistryError(`${url.origin} gave no token for ${ref.repository}`);
    return token;
  }
}

/** 127.0.0.0/8, ::1 and localhost: where a login over http stays on the machine. */
function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || hostname === '::1' || /^127\./.test(hostname);
}
