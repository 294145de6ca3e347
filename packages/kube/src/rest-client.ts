import { readFileSync } from 'node:fs';
import { Agent, type RequestOptions } from 'node:https';
import { ConfigError, KubeApiError } from '@baton/errors';
import { parse } from 'yaml';
import {
  apiError,
  type KubeResponse,
  type RestObject,
  send,
  statusOfError,
  stream,
  type WatchEvent,
} from './rest-http.js';

export interface KubeTarget {
  /** `https://host:port` of the apiserver. */
  readonly server: string;
  /** PEM of the CA that signed the apiserver's certificate; required unless {@link authorize} sets the TLS options. */
  readonly caPem?: string;
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
  /**
   * Completes each request's options with TLS material, credentials and an agent, e.g. client-node's
   * `KubeConfig.applyToHTTPSOptions` (exec plugins, impersonation, proxies) for `@baton/kube`'s clients. It may set
   * `agent`; the client's own keep-alive agent is used otherwise.
   */
  readonly authorize?: (options: RequestOptions) => Promise<void>;
  /**
   * Told the options of a request answered 401; true sends it once more with options {@link authorize} fills afresh
   * (an exec plugin's credential dropped, as client-go does).
   */
  readonly unauthorized?: (sent: RequestOptions) => boolean;
  /**
   * Deadline of each request, from sending it to the end of the answer; a call's own `signal` can end it sooner.
   * @default 30_000
   */
  readonly requestTimeoutMs?: number;
}

/** Options of {@link KubeRestClient.apply}. */
export interface RestApplyOptions {
  /** The field manager the apiserver records in `managedFields`. */
  readonly fieldManager: string;
  /** Take ownership of fields another manager owns (a takeover). @default false */
  readonly force?: boolean;
  /** The apiserver validates, defaults and answers, and stores nothing. @default false */
  readonly dryRun?: boolean;
  readonly signal?: AbortSignal;
}

/** A resource's REST mapping, found by discovery. */
export interface ResourceInfo {
  readonly name: string;
  readonly namespaced: boolean;
}

/**
 * baton's one small Kubernetes REST client over `node:https`, for any kind as JSON: server-side apply with `force` and
 * `dryRun`, subresources, merge and JSON patches, and discovery refreshed after a CRD is created. The controller uses
 * it alone (ADR 0006: this entry, `@baton/kube/rest`, does not load client-node, ~70 MB less memory); `@baton/kube`
 * uses it for what client-node's typed models would change (they drop fields they do not know, such as a CRD
 * schema's `default`s). Failures become {@link KubeApiError} with `details.status` and the apiserver's message.
 */
export class KubeRestClient {
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
    if (!target.caPem && !target.authorize)
      throw new ConfigError(`the client for ${target.server} has no CA; baton verifies the apiserver's certificate`);
    this.target = target;
    this.agent = new Agent({
      ...(target.caPem ? { ca: target.caPem } : {}),
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
  ): KubeRestClient {
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
    return new KubeRestClient({
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
  ): KubeRestClient {
    const host = env.KUBERNETES_SERVICE_HOST;
    const port = env.KUBERNETES_SERVICE_PORT ?? '443';
    if (!host) throw new ConfigError('KUBERNETES_SERVICE_HOST is not set: not running in a pod; pass --kubeconfig');
    const h = host.includes(':') ? `[${host}]` : host;
    return new KubeRestClient({
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
  guardWrites(guard: () => void): KubeRestClient {
    // A view, not a copy: it must share the agent (sockets) and discovery, and close() closes both.
    const view = Object.create(this) as KubeRestClient;
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

  /**
   * One raw request; resolves for every HTTP status, rejects only on transport errors, the request deadline
   * ({@link KubeTarget.requestTimeoutMs}) or `signal`.
   * @throws KubeApiError with `details.status` 0 on a transport error or the deadline; `signal`'s reason on abort.
   */
  async raw(
    method: string,
    path: string,
    body?: unknown,
    contentType = 'application/json',
    signal?: AbortSignal,
  ): Promise<KubeResponse> {
    if (method !== 'GET' && this.writeGuard) this.writeGuard();
    const url = new URL(path, this.target.server);
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const timeoutMs = this.target.requestTimeoutMs ?? 30_000;
    const deadline = AbortSignal.timeout(timeoutMs);
    const ended = signal ? AbortSignal.any([signal, deadline]) : deadline;
    for (let attempt = 1; ; attempt++) {
      const options = await this.requestOptions(method, payload, contentType);
      let res: KubeResponse;
      try {
        res = await send(url, options, payload, ended);
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        const why = deadline.aborted ? `timed out after ${timeoutMs / 1000} s` : `failed: ${(err as Error).message}`;
        throw new KubeApiError(`${method} ${url.pathname} ${why}; is the apiserver reachable?`, {
          cause: err,
          details: { status: 0, apiMessage: why },
        });
      }
      // A 401 means nothing was done: sending once more with a fresh credential is safe for writes too.
      if (res.status === 401 && attempt === 1 && this.target.unauthorized?.(options)) continue;
      return res;
    }
  }

  private async requestOptions(method: string, payload: string | undefined, contentType: string) {
    const token = this.bearer();
    const options: RequestOptions = {
      method,
      agent: this.agent,
      headers: {
        accept: 'application/json',
        ...(this.target.userAgent ? { 'user-agent': this.target.userAgent } : {}),
        // Explicit length: Node sends a DELETE body without one, and the apiserver then reads
        // the body as the next request on the keep-alive socket (400 Bad Request).
        ...(payload !== undefined ? { 'content-type': contentType, 'content-length': Buffer.byteLength(payload) } : {}),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
    };
    await this.target.authorize?.(options);
    return options;
  }

  /**
   * A request that must succeed (2xx).
   * @throws KubeApiError with the apiserver's message and `details.status`.
   */
  async call<T = RestObject>(
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

  /**
   * Streams a watch (`path` carries `watch=1` and its selectors) and hands each event to `onEvent`, until the apiserver
   * ends the stream (its `timeoutSeconds`), `signal` aborts, or the connection drops. A watch has no request deadline:
   * it is meant to stay open. It takes its own connection, outside the pool the other calls share.
   * @throws KubeApiError with `details.status` for an answer other than 200 (the first event of a stale
   *   `resourceVersion` is an `ERROR` event with code 410, handed to `onEvent` like the others), or 0 on a transport
   *   error; `signal`'s reason on abort.
   */
  async watch(path: string, onEvent: (event: WatchEvent) => void, signal?: AbortSignal): Promise<void> {
    const url = new URL(path, this.target.server);
    const options = await this.requestOptions('GET', undefined, 'application/json');
    if (options.agent === this.agent) options.agent = false;
    try {
      await stream(url, options, signal, onEvent);
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      if (err instanceof KubeApiError) throw err;
      throw new KubeApiError(`watch ${url.pathname} failed: ${(err as Error).message}; is the apiserver reachable?`, {
        cause: err,
        details: { status: 0, apiMessage: (err as Error).message },
      });
    }
  }

  /** Like {@link call} but a 404 resolves to `undefined`. */
  async get<T = RestObject>(path: string, signal?: AbortSignal): Promise<T | undefined> {
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
    readonly apiVersion: string;
    readonly kind: string;
    readonly metadata: { readonly name: string; readonly namespace?: string | undefined };
  }): Promise<string> {
    return `${await this.collectionPath(obj.apiVersion, obj.kind, obj.metadata.namespace)}/${encodeURIComponent(obj.metadata.name)}`;
  }

  /**
   * Server-side apply of `obj` (sent as JSON, a subset of YAML as the apply content type requires), every field kept.
   * @returns the object as the apiserver stored it (or would have, on a dry run).
   * @throws KubeApiError (403 forbidden, 409 conflict without `force`, 422 invalid, ...).
   */
  async apply(obj: RestObject, options: RestApplyOptions): Promise<RestObject> {
    const q = new URLSearchParams({ fieldManager: options.fieldManager });
    if (options.force) q.set('force', 'true');
    if (options.dryRun) q.set('dryRun', 'All');
    return this.call(
      'PATCH',
      `${await this.objectPath(obj)}?${q}`,
      obj,
      'application/apply-patch+yaml',
      options.signal,
    );
  }

  /**
   * Reads one object with every field the apiserver returned.
   * @returns undefined when it does not exist, or its kind is not served.
   * @throws KubeApiError on any other failure.
   */
  async read(
    ref: Pick<RestObject, 'apiVersion' | 'kind' | 'metadata'>,
    signal?: AbortSignal,
  ): Promise<RestObject | undefined> {
    let path: string;
    try {
      path = await this.objectPath(ref);
    } catch (err) {
      // A kind that is not served (its CRD is not installed yet) has no objects: the handoff reads planned objects of
      // the set's own CRDs before the push creates them.
      if (err instanceof KubeApiError && statusOfError(err) === 404) return undefined;
      throw err;
    }
    return this.get(path, signal);
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
