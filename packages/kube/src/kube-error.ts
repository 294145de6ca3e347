import { KubeApiError } from '@baton/errors';
import type { ApiException } from '@kubernetes/client-node';

/**
 * client-node's ApiException, recognised by its shape: importing the class would load client-node into every module
 * graph that only plans (the Pulumi program, `baton plan` without a cluster), for an instanceof check.
 */
function isApiException(err: unknown): err is ApiException<unknown> {
  return (
    err instanceof Error && typeof (err as { code?: unknown }).code === 'number' && 'body' in err && 'headers' in err
  );
}

/** The HTTP status of a failed client-node call, or 0 when the error did not come from the API server. */
export function statusOf(err: unknown): number {
  if (isApiException(err)) return err.code;
  if (err instanceof KubeApiError) return Number(err.details?.status ?? 0);
  return 0;
}

/**
 * Wraps a client-node failure in a {@link KubeApiError} whose message names the call and the object.
 * Only the status and the API server's reason are kept: response bodies may echo request content.
 */
export function toKubeApiError(err: unknown, what: string, fix = ''): KubeApiError {
  const apiMessage = err instanceof KubeApiError ? err.details?.apiMessage : undefined;
  // A KubeApiError that already names its operation stays as it is; one from the REST client names only its path.
  if (err instanceof KubeApiError && typeof apiMessage !== 'string') return err;
  const status = statusOf(err);
  let reason = typeof apiMessage === 'string' ? apiMessage : '';
  if (isApiException(err)) {
    const body = err.body as unknown;
    const parsed = typeof body === 'string' ? safeJson(body) : body;
    const message = (parsed as { message?: unknown } | undefined)?.message;
    reason = typeof message === 'string' ? message : '';
  } else if (isAbort(err)) {
    // node-fetch says only "The user aborted a request." for the per-request deadline too.
    reason = `no answer from the API server in time (the request's deadline passed or the run was stopped); check that the API server is up and reachable`;
  } else if (err instanceof Error && !reason) {
    reason = err.message;
  }
  const suffix = fix ? `; ${fix}` : '';
  return new KubeApiError(`${what} failed${status ? ` (HTTP ${status})` : ''}${reason ? `: ${reason}` : ''}${suffix}`, {
    cause: err,
    details: { status, what },
  });
}

function isAbort(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || (err as { type?: unknown }).type === 'aborted');
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Runs `call`, turning an API failure into a {@link KubeApiError} that names `what`. */
export async function kubeCall<T>(what: string, call: () => Promise<T>, fix = ''): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw toKubeApiError(err, what, fix);
  }
}
