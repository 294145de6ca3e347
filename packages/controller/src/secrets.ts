import type { KubeRestClient } from '@baton/kube/rest';
import { SyncError } from './applier.js';
import type { GitAuth } from './git-source.js';

/**
 * The decoded data of a Secret the GitSync references; `keys` says what it must hold, for the message when it is
 * missing.
 * @throws SyncError `SecretNotFound` (stalled) when the Secret does not exist; KubeApiError on other API failures.
 */
export async function readSecretData(
  kube: KubeRestClient,
  namespace: string,
  name: string,
  keys: string,
  signal?: AbortSignal,
): Promise<Record<string, string>> {
  const s = await kube.get<{ data?: Record<string, string> }>(
    `/api/v1/namespaces/${namespace}/secrets/${name}`,
    signal,
  );
  if (!s)
    throw new SyncError(
      'SecretNotFound',
      `Secret ${namespace}/${name} referenced by the GitSync does not exist; create it (${keys})`,
      { isStalled: true },
    );
  return Object.fromEntries(
    Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
  );
}

/**
 * The Git pull credential of `spec.secretRef`: a bearer token, or a username and password.
 * @throws SyncError `InvalidSecret` (stalled) when the Secret has neither.
 */
export async function readGitAuth(
  kube: KubeRestClient,
  namespace: string,
  name: string,
  signal?: AbortSignal,
): Promise<GitAuth> {
  const d = await readSecretData(
    kube,
    namespace,
    name,
    'spec.secretRef: keys username+password or bearerToken',
    signal,
  );
  if (d.bearerToken) return { bearerToken: d.bearerToken };
  if (d.username !== undefined && d.password !== undefined) return { username: d.username, password: d.password };
  throw new SyncError(
    'InvalidSecret',
    `Secret ${namespace}/${name} has neither bearerToken nor username+password; add those keys`,
    { isStalled: true },
  );
}

/**
 * The webhook's HMAC key: key `secret` of `spec.webhookSecretRef`.
 * @throws SyncError `InvalidSecret` (stalled) when the key is missing.
 */
export async function readWebhookKey(
  kube: KubeRestClient,
  namespace: string,
  name: string,
  signal?: AbortSignal,
): Promise<string> {
  const d = await readSecretData(
    kube,
    namespace,
    name,
    'spec.webhookSecretRef: key secret, the webhook HMAC key',
    signal,
  );
  if (!d.secret)
    throw new SyncError(
      'InvalidSecret',
      `Secret ${namespace}/${name} has no key "secret" for the webhook HMAC; add it`,
      {
        isStalled: true,
      },
    );
  return d.secret;
}
