import type { KubeRestClient } from '@baton/kube/rest';
import { describe, expect, it } from 'vitest';
import { readGitAuth, readWebhookKey } from './secrets.js';

// What a GitSync's missing Secret says: the keys that Secret must hold, which differ by reference (issue 28: the
// webhook Secret's condition named the pull credential's keys).
const absent = { get: async () => undefined } as unknown as KubeRestClient;
const holding = (data: Record<string, string>) =>
  ({
    get: async () => ({
      data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
    }),
  }) as unknown as KubeRestClient;

describe('the Secrets a GitSync references', () => {
  it('a missing webhook Secret names its own key, secret', async () => {
    await expect(readWebhookKey(absent, 'baton-system', 'baton-webhook')).rejects.toThrow(
      'Secret baton-system/baton-webhook referenced by the GitSync does not exist; create it (spec.webhookSecretRef: key secret, the webhook HMAC key)',
    );
  });

  it('a missing pull Secret names username+password or bearerToken', async () => {
    await expect(readGitAuth(absent, 'baton-system', 'pull')).rejects.toThrow(
      /create it \(spec\.secretRef: keys username\+password or bearerToken\)/,
    );
  });

  it('reads the webhook key and the pull credential when present', async () => {
    expect(await readWebhookKey(holding({ secret: 'k' }), 'ns', 'w')).toBe('k');
    expect(await readGitAuth(holding({ username: 'u', password: 'p' }), 'ns', 'p')).toEqual({
      username: 'u',
      password: 'p',
    });
  });
});
