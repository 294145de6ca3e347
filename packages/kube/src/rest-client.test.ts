import { createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { KubeRestClient } from './rest-client.js';

/** A server that accepts connections and never answers (a stalled apiserver, as under SIGSTOP). */
async function stalledServer() {
  const sockets: Socket[] = [];
  const server = createServer((s) => sockets.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `https://127.0.0.1:${port}`,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

describe('KubeRestClient', () => {
  it('ends every request at its deadline, with a KubeApiError that says so', async () => {
    const s = await stalledServer();
    stop = s.close;
    const kube = new KubeRestClient({ server: s.url, authorize: async () => {}, requestTimeoutMs: 200 });
    const t0 = performance.now();
    const err = await kube.get('/api/v1/namespaces/x').catch((e: unknown) => e);
    expect(performance.now() - t0).toBeLessThan(5_000);
    expect(err).toMatchObject({
      message: 'GET /api/v1/namespaces/x timed out after 0.2 s; is the apiserver reachable?',
      details: { status: 0 },
    });
    kube.close();
  });

  it('ends a request when the caller aborts, with the caller’s reason, not as a timeout', async () => {
    const s = await stalledServer();
    stop = s.close;
    const kube = new KubeRestClient({ server: s.url, authorize: async () => {} });
    const ctl = new AbortController();
    const pending = kube.get('/api', ctl.signal).catch((e: unknown) => e);
    ctl.abort(new Error('shutting down'));
    expect(await pending).toEqual(new Error('shutting down'));
    kube.close();
  });

  it('refuses a target without a CA', () => {
    expect(() => new KubeRestClient({ server: 'https://127.0.0.1:1' })).toThrow(/has no CA/);
  });
});
