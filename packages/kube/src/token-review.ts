import { clientsFromToken, type KubeClients } from './kube-clients.js';
import { kubeCall, statusOf, toKubeApiError } from './kube-error.js';

/** The TokenReview verdict on a token. */
export interface TokenReviewResult {
  readonly authenticated: boolean;
  /** The username the token authenticates as, when it does. */
  readonly username: string | undefined;
  /** The review's `status.error`, when the API server gave one. */
  readonly error: string | undefined;
}

/**
 * Asks the API server (as the operator) whether `token` authenticates.
 * @throws {KubeApiError} when the TokenReview itself fails.
 */
export async function reviewToken(operator: KubeClients, token: string): Promise<TokenReviewResult> {
  const r = await kubeCall('create TokenReview', () => operator.authn.createTokenReview({ body: { spec: { token } } }));
  return {
    authenticated: r.status?.authenticated === true,
    username: r.status?.user?.username,
    error: r.status?.error,
  };
}

/**
 * Makes one direct request with `token` (a SelfSubjectReview) and returns its HTTP status: 201/200 while the token
 * works, 401 once the API server refuses it.
 * @throws {KubeApiError} on a transport failure (no HTTP status).
 */
export async function probeToken(target: Pick<KubeClients, 'server' | 'caData'>, token: string): Promise<number> {
  const c = clientsFromToken(target, token);
  try {
    await c.authn.createSelfSubjectReview({ body: {} });
    return 201;
  } catch (err) {
    const status = statusOf(err);
    if (status === 0) throw toKubeApiError(err, 'probe with the bootstrap token');
    return status;
  }
}
