import { ConfigError } from '@baton/errors';
import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { clientsFromKubeConfig, clientsFromKubeconfigContent, clientsFromToken } from './kube-clients.js';

const SECRET = 'not-a-real-token-7c1e9b';
const text = (extra = '') => `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: 'https://127.0.0.1:6443'}}]
users: [{name: u, user: {token: ${SECRET}}}]${extra}
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
`;

describe('clientsFromKubeconfigContent', () => {
  it('loads YAML or JSON text held in memory', () => {
    expect(clientsFromKubeconfigContent(text()).server).toBe('https://127.0.0.1:6443');
    const json = JSON.stringify({
      apiVersion: 'v1',
      clusters: [{ name: 'c', cluster: { server: 'https://10.0.0.1' } }],
      users: [{ name: 'u', user: { token: SECRET } }],
      contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'ctx',
    });
    expect(clientsFromKubeconfigContent(json, 'ctx').server).toBe('https://10.0.0.1');
  });

  it('refuses broken text or an unknown context without quoting the text', () => {
    const broken = () => clientsFromKubeconfigContent(text('\n  oops: [unclosed'));
    expect(broken).toThrow(ConfigError);
    expect(broken).toThrow(/not a valid kubeconfig/);
    expect(broken).not.toThrow(new RegExp(SECRET));
    const ctx = () => clientsFromKubeconfigContent(text(), 'nope');
    expect(ctx).toThrow(/the inline kubeconfig has no context "nope"; choose one of: ctx/);
    expect(ctx).not.toThrow(new RegExp(SECRET));
  });
});

describe('TLS settings', () => {
  it('refuses insecure-skip-tls-verify, naming the cluster and the fix', () => {
    const insecure = text().replace(
      "server: 'https://127.0.0.1:6443'",
      "server: 'https://127.0.0.1:6443', insecure-skip-tls-verify: true",
    );
    expect(() => clientsFromKubeconfigContent(insecure)).toThrow(
      /cluster "c" sets insecure-skip-tls-verify: .*set certificate-authority or certificate-authority-data/,
    );
  });

  it("gives bearer clients the operator cluster's CA file, TLS server name and proxy", () => {
    const withFiles = text().replace(
      "server: 'https://127.0.0.1:6443'",
      "server: 'https://127.0.0.1:6443', certificate-authority: /etc/ca.crt, tls-server-name: kubernetes, proxy-url: 'http://proxy:3128'",
    );
    const operator = clientsFromKubeconfigContent(withFiles);
    const bearer = clientsFromToken(operator, 'tok').kc.getCurrentCluster();
    expect(bearer).toMatchObject({
      server: 'https://127.0.0.1:6443',
      caFile: '/etc/ca.crt',
      tlsServerName: 'kubernetes',
      proxyUrl: 'http://proxy:3128',
      skipTLSVerify: false,
    });
  });
});

describe('a request to an API server that never answers', () => {
  it('fails after the per-request timeout instead of hanging (every client, typed and generic)', async () => {
    const { createServer } = await import('node:net');
    const sockets: import('node:net').Socket[] = [];
    // Accepts the connection and never writes a byte: a SIGSTOPped apiserver looks like this.
    const server = createServer((s) => sockets.push(s)).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const port = (server.address() as { port: number }).port;
    try {
      const kc = new KubeConfig();
      kc.loadFromString(text().replace('https://127.0.0.1:6443', `https://127.0.0.1:${port}`));
      const c = clientsFromKubeConfig(kc, { requestTimeoutMs: 300 });
      const t0 = performance.now();
      const e = await c.version.getCode().catch((x: unknown) => x);
      expect(String((e as Error).message)).toMatch(/abort|timeout/i);
      await expect(
        c.rest.read({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'x', namespace: 'y' } }),
      ).rejects.toThrow();
      expect(performance.now() - t0).toBeLessThan(5000);
    } finally {
      for (const s of sockets) s.destroy();
      server.close();
    }
  });
});
