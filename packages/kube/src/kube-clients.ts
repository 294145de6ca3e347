import { existsSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { dirname } from 'node:path';
import { ConfigError } from '@baton/errors';
import * as k8s from '@kubernetes/client-node';
import { ExecCredentialAuth } from './exec-credential.js';
import { statusOf } from './kube-error.js';
import { KubeRestClient } from './rest-client.js';

/** The exec authenticator of each KubeConfig baton built clients from (impersonating clients share the operator's). */
const execAuths = new WeakMap<k8s.KubeConfig, ExecCredentialAuth>();

/**
 * Puts baton's exec credential plugin runner ({@link ExecCredentialAuth}) in place of client-node's own, which
 * ignores provideClusterInfo and installHint and runs the plugin again for a credential without expiry; and trims a
 * token read from a token-file (client-node keeps its trailing newline, which no API server accepts).
 */
function prepareAuth(kc: k8s.KubeConfig, baseDir: string | undefined, shared?: ExecCredentialAuth): void {
  if (execAuths.has(kc)) return;
  const auth = shared ?? new ExecCredentialAuth(() => kc.getCurrentCluster(), baseDir);
  // client-node exports neither the field nor the class: find its ExecAuth by name (pinned 1.4.0, checked by tests).
  const builtIn = (kc as unknown as { authenticators?: object[] }).authenticators;
  const i = builtIn?.findIndex((a) => a.constructor.name === 'ExecAuth') ?? -1;
  if (!builtIn || i < 0)
    throw new Error(
      '@kubernetes/client-node changed: KubeConfig has no built-in ExecAuth to replace; update kube-clients.ts',
    );
  builtIn[i] = auth;
  execAuths.set(kc, auth);
  for (const user of kc.getUsers()) {
    if (user.token) (user as { token?: string }).token = user.token.trim();
  }
}

/**
 * `api` whose calls, when the KubeConfig's user gets its credential from a plugin, are sent once more after a 401 with
 * a fresh credential: a token the API server stopped accepting before its stated expiry (revoked, rotated, or given
 * without one) would otherwise fail the run, its cleanup included. A 401 says nothing was done, so sending the same
 * request again is safe for writes too. Any other client is returned as it is.
 */
function retryingUnauthorized<T extends object>(
  api: T,
  auth: ExecCredentialAuth | undefined,
  user: string | undefined,
): T {
  if (!auth || !user) return api;
  return new Proxy(api, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const first = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (!(first instanceof Promise)) return first;
        return first.catch((err: unknown) => {
          if (statusOf(err) === 401 && auth.unauthorized(user))
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          throw err;
        });
      };
    },
  });
}

/** The typed API clients baton uses, all built from one KubeConfig. */
export interface KubeClients {
  /** The configuration the clients were built from. */
  readonly kc: k8s.KubeConfig;
  /** API server URL. */
  readonly server: string;
  /** Base64 PEM of the API server CA, when the kubeconfig carries one. */
  readonly caData: string | undefined;
  readonly core: k8s.CoreV1Api;
  readonly apps: k8s.AppsV1Api;
  readonly rbac: k8s.RbacAuthorizationV1Api;
  readonly authn: k8s.AuthenticationV1Api;
  readonly authz: k8s.AuthorizationV1Api;
  readonly coordination: k8s.CoordinationV1Api;
  readonly version: k8s.VersionApi;
  /** client-node's generic object API (create, read, replace, delete, list of any kind through its models). */
  readonly objects: k8s.KubernetesObjectApi;
  /**
   * The light REST client on the same KubeConfig, for writes and reads that must keep every field: client-node's
   * models keep only the fields they map, so a CustomResourceDefinition sent through them loses its schema's
   * `default`, `enum` and `x-kubernetes-*` keys (Flux's CRDs: 20 `default`s became 1). Server-side apply and
   * {@link readObject} go through it.
   */
  readonly rest: KubeRestClient;
}

/**
 * How long one API request may go unanswered before it fails, in ms: a stalled API server must not hang a cleanup
 * path (close, revoke, release) until the token expires. Longer than any request baton makes (the largest is a
 * server-side apply of a CRD: well under a second on the test bed).
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** Options of {@link clientsFromKubeConfig}. */
export interface KubeClientsOptions {
  /** How long one request may take before it is aborted, in ms. @default {@link DEFAULT_REQUEST_TIMEOUT_MS} */
  readonly requestTimeoutMs?: number;
  /** Folder a relative exec plugin command is resolved against (the kubeconfig file's, as kubectl does). */
  readonly baseDir?: string;
}

/**
 * A KubeConfig whose every request carries a deadline: client-node calls `applySecurityAuthentication` on each
 * request of every API client (typed and generic), so the signal is set in one place.
 */
class DeadlineKubeConfig extends k8s.KubeConfig {
  constructor(
    from: k8s.KubeConfig,
    private readonly timeoutMs: number,
  ) {
    super();
    this.loadFromOptions({
      clusters: from.clusters,
      users: from.users,
      contexts: from.contexts,
      currentContext: from.currentContext,
    });
  }

  override async applySecurityAuthentication(context: k8s.RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const deadline = AbortSignal.timeout(this.timeoutMs);
    const own = context.getSignal();
    context.setSignal(own ? AbortSignal.any([own, deadline]) : deadline);
  }
}

/**
 * Builds {@link KubeClients} from a loaded KubeConfig; every request is bounded by `options.requestTimeoutMs`.
 * @throws {ConfigError} when the context names no cluster, or the cluster skips TLS verification (baton never sends
 * a credential to a server it cannot verify).
 */
export function clientsFromKubeConfig(kc: k8s.KubeConfig, options: KubeClientsOptions = {}): KubeClients {
  prepareAuth(kc, options.baseDir);
  const cluster = kc.getCurrentCluster();
  if (!cluster)
    throw new ConfigError(`kubeconfig context "${kc.getCurrentContext()}" names no cluster; fix the context`);
  if (cluster.skipTLSVerify)
    throw new ConfigError(
      `kubeconfig cluster "${cluster.name}" sets insecure-skip-tls-verify: baton refuses to send credentials to an API server it cannot verify; set certificate-authority or certificate-authority-data instead`,
    );
  const timed = new DeadlineKubeConfig(kc, options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
  // The clients send through `timed`: it runs the same plugin runner (one cache) as `kc`.
  prepareAuth(timed, options.baseDir, execAuths.get(kc));
  const user = kc.getCurrentUser();
  const plugin = user?.exec ? execAuths.get(kc) : undefined;
  const retry = <T extends object>(api: T): T => retryingUnauthorized(api, plugin, user?.name);
  return {
    kc,
    server: cluster.server,
    caData: cluster.caData,
    core: retry(timed.makeApiClient(k8s.CoreV1Api)),
    apps: retry(timed.makeApiClient(k8s.AppsV1Api)),
    rbac: retry(timed.makeApiClient(k8s.RbacAuthorizationV1Api)),
    authn: retry(timed.makeApiClient(k8s.AuthenticationV1Api)),
    authz: retry(timed.makeApiClient(k8s.AuthorizationV1Api)),
    coordination: retry(timed.makeApiClient(k8s.CoordinationV1Api)),
    version: retry(timed.makeApiClient(k8s.VersionApi)),
    objects: retry(k8s.KubernetesObjectApi.makeApiClient(timed)),
    rest: new KubeRestClient({
      ...(plugin && user
        ? { unauthorized: (sent: RequestOptions) => plugin.unauthorized(user.name, sentCredential(sent)) }
        : {}),
      server: cluster.server,
      // client-node's public API fills in what the KubeConfig says: CA, client certificate, token, exec plugin (baton's
      // runner, as for the typed clients), impersonation, TLS server name and proxy agent, fresh for each request.
      authorize: (o: RequestOptions) => timed.applyToHTTPSOptions(o),
      requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    }),
  };
}

/** The bearer token or client certificate a request carried, as the plugin runner put them there. */
function sentCredential(o: RequestOptions): { token?: string; cert?: string } {
  const auth = (o.headers as Record<string, unknown> | undefined)?.Authorization;
  const token = typeof auth === 'string' && auth.startsWith('Bearer ') ? auth.slice('Bearer '.length) : undefined;
  const cert = typeof o.cert === 'string' ? o.cert : undefined;
  return { ...(token ? { token } : {}), ...(cert ? { cert } : {}) };
}

/**
 * Loads a kubeconfig as kubectl does: the file (or `$KUBECONFIG` resolution when no path is given) and an optional
 * context.
 * @throws {ConfigError} when the file cannot be read or the context does not exist.
 */
export function clientsFromKubeconfigFile(path: string, context?: string): KubeClients {
  const kc = new k8s.KubeConfig();
  try {
    kc.loadFromFile(path);
  } catch (err) {
    throw new ConfigError(
      `cannot load kubeconfig ${path}: ${(err as Error).message}; pass --kubeconfig with a readable file`,
      {
        cause: err,
      },
    );
  }
  useContext(kc, `kubeconfig ${path}`, context);
  return clientsFromKubeConfig(kc, { baseDir: dirname(path) });
}

/**
 * Loads a kubeconfig list the way kubectl merges `KUBECONFIG=a:b`: files that do not exist are skipped; for every
 * cluster, user and context name the first file that defines it wins; `current-context` comes from the first file that
 * sets one; relative certificate paths resolve against their own file's folder (a relative exec command against the
 * first file's). One path is {@link clientsFromKubeconfigFile}.
 * @throws {ConfigError} when no file of the list exists, one cannot be read, or the context does not exist.
 */
export function clientsFromKubeconfigFiles(paths: readonly string[], context?: string): KubeClients {
  const present = paths.filter((p) => existsSync(p));
  if (present.length === 0)
    throw new ConfigError(
      `none of the kubeconfig files ${paths.join(', ')} exists (KUBECONFIG); pass --kubeconfig with a readable file`,
    );
  if (present.length === 1) return clientsFromKubeconfigFile(present[0] ?? '', context);
  const clusters: k8s.Cluster[] = [];
  const users: k8s.User[] = [];
  const contexts: k8s.Context[] = [];
  let current = '';
  for (const path of present) {
    const kc = new k8s.KubeConfig();
    try {
      kc.loadFromFile(path);
    } catch (err) {
      throw new ConfigError(
        `cannot load kubeconfig ${path}: ${(err as Error).message}; fix or remove it from KUBECONFIG`,
        {
          cause: err,
        },
      );
    }
    const add = <T extends { name: string }>(into: T[], from: readonly T[]) => {
      for (const x of from) if (!into.some((y) => y.name === x.name)) into.push(x);
    };
    add(clusters, kc.getClusters());
    add(users, kc.getUsers());
    add(contexts, kc.getContexts());
    current ||= kc.getCurrentContext() ?? '';
  }
  const merged = new k8s.KubeConfig();
  merged.loadFromOptions({ clusters, users, contexts, currentContext: current });
  useContext(merged, `kubeconfig ${present.join(':')}`, context);
  return clientsFromKubeConfig(merged, { baseDir: dirname(present[0] ?? '') });
}

/**
 * Loads a kubeconfig held in memory (YAML or JSON text, e.g. a Pulumi output) and an optional context. The text
 * carries credentials, so no message quotes it, nor the parser's error (which may show the offending lines).
 * @throws {ConfigError} when the text is not a kubeconfig or the context does not exist.
 */
export function clientsFromKubeconfigContent(content: string, context?: string): KubeClients {
  const kc = new k8s.KubeConfig();
  try {
    kc.loadFromString(content);
  } catch {
    throw new ConfigError(
      'the inline kubeconfig (cluster.kubeconfigContent) is not a valid kubeconfig in YAML or JSON; its text is not shown because it holds credentials',
    );
  }
  useContext(kc, 'the inline kubeconfig', context);
  return clientsFromKubeConfig(kc);
}

function useContext(kc: k8s.KubeConfig, where: string, context: string | undefined): void {
  if (context === undefined) return;
  if (!kc.getContextObject(context)) {
    throw new ConfigError(
      `${where} has no context "${context}"; choose one of: ${kc
        .getContexts()
        .map((c) => c.name)
        .join(', ')}`,
    );
  }
  kc.setCurrentContext(context);
}

/**
 * The operator's clients acting as `username` (the `Impersonate-User` header; the API server adds a ServiceAccount's
 * groups): requests are authorized and admitted as that user, without its credential. Needs `impersonate` on users
 * or serviceaccounts.
 */
export function clientsImpersonating(operator: Pick<KubeClients, 'kc'>, username: string): KubeClients {
  const kc = new k8s.KubeConfig();
  const context = operator.kc.getContextObject(operator.kc.getCurrentContext());
  const user = operator.kc.getCurrentUser();
  const cluster = operator.kc.getCurrentCluster();
  if (!context || !user || !cluster) throw new ConfigError('the operator kubeconfig has no current context');
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ ...user, impersonateUser: username }],
    contexts: [{ ...context, name: 'impersonating' }],
    currentContext: 'impersonating',
  });
  prepareAuth(kc, undefined, execAuths.get(operator.kc));
  return clientsFromKubeConfig(kc);
}

/**
 * Clients that authenticate with a bearer token only (no client certificate), against the same API server as
 * `target`, verified the same way: its CA (inline or a file), TLS server name and proxy are kept.
 * The token lives only inside the returned KubeConfig; never log it.
 */
export function clientsFromToken(
  target: Pick<KubeClients, 'server' | 'caData'> & { readonly kc?: k8s.KubeConfig },
  token: string,
): KubeClients {
  const from = target.kc?.getCurrentCluster();
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'target',
        server: target.server,
        caData: target.caData,
        ...(from?.caFile ? { caFile: from.caFile } : {}),
        ...(from?.tlsServerName ? { tlsServerName: from.tlsServerName } : {}),
        ...(from?.proxyUrl ? { proxyUrl: from.proxyUrl } : {}),
        skipTLSVerify: false,
      },
    ],
    users: [{ name: 'bearer', token }],
    contexts: [{ name: 'bearer', cluster: 'target', user: 'bearer' }],
    currentContext: 'bearer',
  });
  return clientsFromKubeConfig(kc);
}
