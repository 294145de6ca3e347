import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { kubeCall } from './kube-error.js';

describe('kubeCall', () => {
  it('says that the API server did not answer in time when the request was aborted by its deadline', async () => {
    const err = (await kubeCall('read Deployment baton-system/baton-controller', () =>
      fetch('http://127.0.0.1:9', { signal: AbortSignal.abort() }),
    ).catch((e: unknown) => e as Error)) as Error;
    expect(err.message).toBe(
      "read Deployment baton-system/baton-controller failed: no answer from the API server in time (the request's deadline passed or the run was stopped); check that the API server is up and reachable",
    );
  });

  it("keeps the status and the API server's message, and only those, of a refused request", async () => {
    const body = JSON.stringify({ message: 'secrets "x" is forbidden', details: { echoed: 'request body' } });
    const err = (await kubeCall('get Secret a/x', () =>
      Promise.reject(new ApiException(403, 'Forbidden', body, {})),
    ).catch((e: unknown) => e as Error)) as Error;
    expect(err.message).toBe('get Secret a/x failed (HTTP 403): secrets "x" is forbidden');
  });
});
