import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { parseImageRef } from './image-ref.js';
import { RegistryClient } from './registry-client.js';

// The client's own rules (tokens, digests, limits) against a small HTTP server that answers as registries do; the
// referrers themselves are read from a real registry in test/integration/image/signature-verify.test.ts.

const D = `sha256:${'a'.repeat(64)}`;
const INDEX = JSON.stringify({
  schemaVersion: 2,
  manifests: [{ mediaType: 'm', digest: D, size: 1, artifactType: 't' }],
});
const seen: { url: string; auth?: string }[] = [];
let server: Server;
let base: string;
const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
  // ghcr.io's way: 401 with a Bearer challenge, then the token realm.
  '/v2/public/app/referrers': (req, res) => {
    if (req.headers.authorization !== 'Bearer anon-token') {
      res.writeHead(401, {
        'www-authenticate': `Bearer realm="${base}/token",service="reg",scope="repository:public/app:pull"`,
      });
      return res.end();
    }
    res.writeHead(200, { 'content-type': 'application/vnd.oci.image.index.v1+json' }).end(INDEX);
  },
  '/token': (req, res) => {
    const q = new URL(req.url!, base).searchParams;
    res.end(
      JSON.stringify(
        q.get('service') === 'reg' && q.get('scope') === 'repository:public/app:pull' ? { token: 'anon-token' } : {},
      ),
    );
  },
  '/v2/private/app/referrers': (_req, res) => {
    res.writeHead(401, { 'www-authenticate': 'Basic realm="registry"' }).end();
  },
  '/v2/huge/app/referrers': (_req, res) => {
    res.writeHead(200, { 'content-length': String(8 << 20) }).end();
  },
  '/v2/lying/app/blobs': (_req, res) => {
    res.end('not what the digest says');
  },
};

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ url: req.url!, ...(req.headers.authorization ? { auth: req.headers.authorization } : {}) });
    const path = new URL(req.url!, 'http://x').pathname;
    const route = Object.entries(routes).find(([p]) => path === p || path.startsWith(`${p}/`));
    if (route) route[1](req, res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const client = () => new RegistryClient({ mirrors: { 'reg.example': base } });
const ref = (repo: string) => {
  const r = parseImageRef(`reg.example/${repo}@${D}`);
  if (typeof r === 'string') throw new Error(r);
  return r;
};

describe('RegistryClient', () => {
  test('fetches an anonymous token when the registry asks for one, and reuses it', async () => {
    const c = client();
    seen.length = 0;
    expect((await c.referrers(ref('public/app'), D)).map((d) => d.digest)).toEqual([D]);
    await c.referrers(ref('public/app'), D, 't');
    expect(seen.map((s) => `${s.url.split('?')[0]} ${s.auth ?? '-'}`)).toEqual([
      `/v2/public/app/referrers/${D} -`,
      '/token -',
      `/v2/public/app/referrers/${D} Bearer anon-token`,
      `/v2/public/app/referrers/${D} Bearer anon-token`,
    ]);
  });

  test('refuses a registry that wants credentials, saying how to go on', async () => {
    await expect(client().referrers(ref('private/app'), D)).rejects.toThrow(
      `${base} requires credentials to read private/app (Basic); baton reads signatures anonymously: mirror the image and its signatures where the operator can read them (push.images.mirrors)`,
    );
  });

  test('falls back to the referrers tag, and finds no referrers where neither exists', async () => {
    seen.length = 0;
    expect(await client().referrers(ref('none/app'), D)).toEqual([]);
    expect(seen.map((s) => s.url)).toEqual([
      `/v2/none/app/referrers/${D}`,
      `/v2/none/app/manifests/sha256-${'a'.repeat(64)}`,
    ]);
  });

  test('does not read an answer larger than a signature listing can be', async () => {
    await expect(client().referrers(ref('huge/app'), D)).rejects.toThrow(
      `${base} served the referrers of the image of ${8 << 20} bytes, more than baton reads`,
    );
  });

  test('refuses a blob whose bytes are not its digest', async () => {
    await expect(client().blob(ref('lying/app'), D)).rejects.toThrow(
      /^http:\/\/127\.0\.0\.1:\d+ served blob sha256:a{64} with the digest sha256:[0-9a-f]{64}$/,
    );
  });

  test('reads a registry at https://<host> unless a mirror is named, and Docker Hub at its API host', () => {
    const c = new RegistryClient();
    const hub = parseImageRef(`redis@${D}`);
    expect(typeof hub !== 'string' && c.baseOf(hub)).toBe('https://registry-1.docker.io');
    expect(c.baseOf(ref('x'))).toBe('https://reg.example');
  });
});
