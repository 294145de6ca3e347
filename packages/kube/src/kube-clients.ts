import type { RequestOptions } from 'node:https';
import { ConfigError } from '@baton/errors';
import * as k8s from '@kubernetes/client-node';
import { KubeRestClient } from './rest-client.js';

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
 * Builds {@link KubeClients} from a loaded KubeConfig.
 * @throws {ConfigError} when the context names no cluster, or the cluster skips TLS verification (baton never sends
 * a credential to a server it cannot verify).
 */
export function clientsFromKubeConfig(kc: k8s.KubeConfig): KubeClients {
  const cluster = kc.getCurrentCluster();
  if (!cluster)
    throw new ConfigError(`kubeconfig context "${kc.getCurrentContext()}" names no cluster; fix the context`);
  if (cluster.skipTLSVerify)
    throw new ConfigError(
      `kubeconfig cluster "${cluster.name}" sets insecure-skip-tls-verify: baton refuses to send credentials to an API server it cannot verify; set certificate-authority or certificate-authority-data instead`,
    );
  return {
    kc,
    server: cluster.server,
    caData: cluster.caData,
    core: kc.makeApiClient(k8s.CoreV1Api),
    apps: kc.makeApiClient(k8s.AppsV1Api),
    rbac: kc.makeApiClient(k8s.RbacAuthorizationV1Api),
    authn: kc.makeApiClient(k8s.AuthenticationV1Api),
    authz: kc.makeApiClient(k8s.AuthorizationV1Api),
    coordination: kc.makeApiClient(k8s.CoordinationV1Api),
    version: kc.makeApiClient(k8s.VersionApi),
    objects: k8s.KubernetesObjectApi.makeApiClient(kc),
    rest: new KubeRestClient({
      server: cluster.server,
      // client-node's public API fills in what the KubeConfig says: CA, client certificate, token, exec plugin,
      // impersonation, TLS server name and proxy agent, fresh for each request as client-node's own clients do.
      authorize: (options: RequestOptions) => kc.applyToHTTPSOptions(options),
    }),
  };
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
  return clientsFromKubeConfig(kc);
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
