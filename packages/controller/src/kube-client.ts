import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { ConfigError, KubeApiError } from '@baton/errors';
import { parse } from 'yaml';

/** A Kubernetes object as the controller handles it: only the header is typed. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    resourceVersion?: string;
    uid?: string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    managedFields?: { manager?: string; operation?: string }[];
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

/** How to reach the apiserver: a server URL, its CA, and a client certificate or a bearer token. */
export interface KubeTarget {
  /** `https://host:port` of the apiserver. */
  readonly server: string;
  /** PEM of the CA that signed the apiserver's certificate. */
  readonly caPem: string;
  /** Client certificate PEM (kubeconfig users with certificates). */
  readonly certPem?: string;
  /** Client key PEM. */
  readonly keyPem?: string;
  /** A fixed bearer token. */
  readonly token?: string;
  /** A file holding the bearer token, re-read so that projected tokens rotate. */
  readonly tokenFile?: string;
  /** `User-Agent` of every request (the apiserver's audit log records it), e.g. `baton-controller (replica-a)`. */
  readonly userAgent?: string;
}

/** A resource's REST mapping, found by discovery. */
export interface ResourceInfo {
  readonly name: string;
  readonly namespaced: boolean;
}

/** The response of one call that did not throw. */
export interface KubeResponse<T = unknown> {
  readonly status: number;
  readonly body: T;
}

/**
 * The controller's small Kubernetes REST client over `node:https`. It exists (rather than
 * `@kubernetes/client-node`'s generic object API) because the controller needs exact control of
 * server-side apply, `dryRun`, subresources and discovery refresh after a CRD is created, and it
 * keeps the image and memory small. Failures become {@link KubeApiError} with `details.status`.
 */
export class KubeClient {
  private readonly target: KubeTarget;
  private readonly agent: Agent;
  private readonly discovery = new Map<string, Map<string, ResourceInfo>>();
  private tokenCache: { value: string; readAtMs: number } | undefined;
  private writeGuard: (() => void) | undefined;

  /**
   * @param target where and how to connect.
   * @param maxSockets parallel connections to the apiserver. @default 16
   */
  constructor(target: KubeTarget, maxSockets = 16) {
    this.target = target;
    this.agent = new Agent({
      ca: target.caPem,
      ...(target.certPem ? { cert: target.certPem } : {}),
      ...(target.keyPem ? { key: target.keyPem } : {}),
      keepAlive: true,
      maxSockets,
    });
  }

  /**
   * A client for a kubeconfig's current context (certificate or token users).
   * @throws ConfigError when the file is missing or lacks a server, CA or credential.
   */
  static fromKubeconfig(
    path: string,
    overrides: { token?: string; tokenFile?: string; userAgent?: string } = {},
  ): KubeClient {
    let kc: {
      'current-context'?: string;
      contexts?: { name: string; context: { cluster: string; user: string } }[];
      clusters?: { name: string; cluster: Record<string, string> }[];
      users?: { name: string; user: Record<string, string> }[];
    };
    try {
      kc = parse(readFileSync(path, 'utf8'));
    } catch (err) {
      throw new ConfigError(
        `kubeconfig ${path} cannot be read: ${(err as Error).message}; pass --kubeconfig with a readable file`,
        { cause: err },
      );
    }
    const ctx = kc.contexts?.find((c) => c.name === kc['current-context']) ?? kc.contexts?.[0];
    const cluster = kc.clusters?.find((c) => c.name === ctx?.context.cluster) ?? kc.clusters?.[0];
    const user = kc.users?.find((u) => u.name === ctx?.context.user) ?? kc.users?.[0];
    if (!cluster?.cluster.server) throw new ConfigError(`kubeconfig ${path}: clusters[0].cluster.server is missing`);
    const b64 = (s: string | undefined) => (s ? Buffer.from(s, 'base64').toString('utf8') : undefined);
    const caPem =
      b64(cluster.cluster['certificate-authority-data']) ??
      (cluster.cluster['certificate-authority']
        ? readFileSync(cluster.cluster['certificate-authority'], 'utf8')
        : undefined);
    if (!caPem)
      throw new ConfigError(
        `kubeconfig ${path}: cluster "${cluster.name}" has no certificate-authority(-data); the controller verifies TLS`,
      );
    const token = overrides.token ?? user?.user.token;
    const tokenFile = overrides.tokenFile ?? user?.user.tokenFile;
    const usesToken = token !== undefined || tokenFile !== undefined;
    const certPem = usesToken ? undefined : b64(user?.user['client-certificate-data']);
    const keyPem = usesToken ? undefined : b64(user?.user['client-key-data']);
    return new KubeClient({
      server: cluster.cluster.server,
      caPem,
      ...(certPem ? { certPem } : {}),
      ...(keyPem ? { keyPem } : {}),
      ...(token ? { token } : {}),
      ...(tokenFile ? { tokenFile } : {}),
      ...(overrides.userAgent ? { userAgent: overrides.userAgent } : {}),
    });
  }

  /**
   * The in-cluster client: the pod's ServiceAccount token (re-read as it rotates) and CA.
   * @throws ConfigError outside a pod.
   */
  static inCluster(
    env: NodeJS.ProcessEnv,
    saDir = '/var/run/secrets/kubernetes.io/serviceaccount',
    userAgent?: string,
  ): KubeClient {
    const host = env.KUBERNETES_SERVICE_HOST;
    const port = env.KUBERNETES_SERVICE_PORT ?? '443';
    if (!host) throw new ConfigError('KUBERNETES_SERVICE_HOST is not set: not running in a pod; pass --kubeconfig');
    const h = host.includes(':') ? `[${host}]` : host;
    return new KubeClient({
      server: `https://${h}:${port}`,
      caPem: readFileSync(`${saDir}/ca.crt`, 'utf8'),
      tokenFile: `${saDir}/token`,
      ...(userAgent ? { userAgent } : {}),
    });
  }

  /**
   * A client on the same connections and discovery cache that calls `guard` right before it sends any request
   * other than a GET; `guard` refuses by throwing, and nothing is sent. The controller fences its writes by its
   * leadership this way, checked at the moment of sending rather than when a sync began.
   */
  guardWrites(guard: () => void): KubeClient {
    // A view, not a copy: it must share the agent (sockets) and discovery, and close() closes both.
    const view = Object.create(this) as KubeClient;
    view.writeGuard = guard;
    return view;
  }

  private bearer(): string | undefined {
    if (this.target.token) return this.target.token;
    if (!this.target.tokenFile) return undefined;
    // Kubelet rotates projected tokens well before expiry; a minute-old read is always valid.
    const now = performance.now();
    if (!this.tokenCache || now - this.tokenCache.readAtMs > 60_000) {
      this.tokenCache = { value: readFileSync(this.target.tokenFile, 'utf8').trim(), readAtMs: now };
    }
    return this.tokenCache.value;
  }

  /** One raw request; resolves for every HTTP status, rejects only on transport errors. */
  raw(
    method: string,
    path: string,
    body?: unknown,
    contentType = 'application/json',
    signal?: AbortSignal,
  ): Promise<KubeResponse> {
    if (method !== 'GET' && this.writeGuard) {
      try {
        this.writeGuard();
      } catch (err) {
        return Promise.reject(err);
      }
    }
    const url = new URL(path, this.target.server);
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const token = this.bearer();
    return new Promise((resolve, reject) => {
      const req = request(
        url,
        {
          method,
          agent: this.agent,
          timeout: 30_000,
          ...(signal ? { signal } : {}),
          headers: {
            accept: 'application/json',
            ...(this.target.userAgent ? { 'user-agent': this.target.userAgent } : {}),
            // Explicit length: Node sends a DELETE body without one, and the apiserver then reads
            // the body as the next request on the keep-alive socket (400 Bad Request).
            ...(payload !== undefined
              ? { 'content-type': contentType, 'content-length': Buffer.byteLength(payload) }
              : {}),
            ...(token ? { authorization: `Bearer ${token}` } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            try {
              parsed = JSON.parse(text);
            } catch {}
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${url.pathname} timed out after 30 s`)));
      req.on('error', (err) =>
        reject(
          new KubeApiError(`${method} ${url.pathname} failed: ${err.message}; is the apiserver reachable?`, {
            cause: err,
            details: { status: 0 },
          }),
        ),
      );
      req.end(payload);
    });
  }

  /**
   * A request that must succeed (2xx).
   * @throws KubeApiError with the apiserver's message and `details.status`.
   */
  async call<T = KubeObject>(
    method: string,
    path: string,
    body?: unknown,
    contentType?: string,
    signal?: AbortSignal,
  ): Promise<T> {
    const res = await this.raw(method, path, body, contentType, signal);
    if (res.status >= 200 && res.status < 300) return res.body as T;
    throw apiError(method, path, res);
  }

  /** Like {@link call} but a 404 resolves to `undefined`. */
  async get<T = KubeObject>(path: string, signal?: AbortSignal): Promise<T | undefined> {
    const res = await this.raw('GET', path, undefined, undefined, signal);
    if (res.status === 404) return undefined;
    if (res.status >= 200 && res.status < 300) return res.body as T;
    throw apiError('GET', path, res);
  }

  /**
   * The REST mapping of `apiVersion`/`kind`, from discovery (cached; refreshed on a miss, so a
   * CRD created a moment ago is found).
   * @throws KubeApiError when the kind is not served.
   */
  async resource(apiVersion: string, kind: string): Promise<ResourceInfo> {
    const cached = this.discovery.get(apiVersion)?.get(kind);
    if (cached) return cached;
    const path = apiVersion === 'v1' ? '/api/v1' : `/apis/${apiVersion}`;
    const res = await this.raw('GET', path);
    const list =
      res.status === 200
        ? (res.body as { resources?: { name: string; kind: string; namespaced: boolean }[] }).resources
        : undefined;
    const map = new Map<string, ResourceInfo>();
    for (const r of list ?? []) if (!r.name.includes('/')) map.set(r.kind, { name: r.name, namespaced: r.namespaced });
    this.discovery.set(apiVersion, map);
    const info = map.get(kind);
    if (!info) {
      throw new KubeApiError(
        `the apiserver does not serve kind ${kind} in ${apiVersion}; install its CustomResourceDefinition first or fix apiVersion`,
        {
          details: { status: 404, apiVersion, kind },
        },
      );
    }
    return info;
  }

  /** The collection path of a kind (in `namespace` when namespaced). */
  async collectionPath(apiVersion: string, kind: string, namespace?: string): Promise<string> {
    const info = await this.resource(apiVersion, kind);
    const base = apiVersion === 'v1' ? '/api/v1' : `/apis/${apiVersion}`;
    return info.namespaced && namespace
      ? `${base}/namespaces/${encodeURIComponent(namespace)}/${info.name}`
      : `${base}/${info.name}`;
  }

  /** The path of one object. */
  async objectPath(obj: {
    apiVersion: string;
    kind: string;
    metadata: { name: string; namespace?: string };
  }): Promise<string> {
    return `${await this.collectionPath(obj.apiVersion, obj.kind, obj.metadata.namespace)}/${encodeURIComponent(obj.metadata.name)}`;
  }

  /**
   * Server-side apply of `obj` as `fieldManager`, forcing conflicts (takeover).
   * @throws KubeApiError (403 forbidden, 422 invalid, ...).
   */
  async apply(
    obj: KubeObject,
    fieldManager: string,
    options: { dryRun?: boolean; signal?: AbortSignal } = {},
  ): Promise<KubeObject> {
    const q = new URLSearchParams({ fieldManager, force: 'true' });
    if (options.dryRun) q.set('dryRun', 'All');
    return this.call(
      'PATCH',
      `${await this.objectPath(obj)}?${q}`,
      obj,
      'application/apply-patch+yaml',
      options.signal,
    );
  }

  /** Drops cached discovery (after CRDs change). */
  forgetDiscovery(apiVersion?: string): void {
    if (apiVersion) this.discovery.delete(apiVersion);
    else this.discovery.clear();
  }

  /** Closes keep-alive sockets. */
  close(): void {
    this.agent.destroy();
  }
}

/** The HTTP status of a KubeApiError (0 for anything else). */
export function statusOfError(err: unknown): number {
  const s = (err as { details?: { status?: unknown } } | undefined)?.details?.status;
  return typeof s === 'number' ? s : 0;
}

function apiError(method: string, path: string, res: KubeResponse): KubeApiError {
  const b = res.body as { message?: string; reason?: string } | string;
  const msg = typeof b === 'object' && b?.message ? b.message : String(b).slice(0, 300);
  return new KubeApiError(`${method} ${path.split('?')[0]} returned ${res.status}: ${msg}`, {
    details: { status: res.status, reason: typeof b === 'object' ? b?.reason : undefined },
  });
}
