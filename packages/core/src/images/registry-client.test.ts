import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { parseImageRef } from './image-ref.js';
import { RegistryClient } from './registry-client.js';
import type { RegistryCredentials, RegistryLogin } from './registry-credentials.js';

// The client's own rules (tokens, digests, limits) against a small HTTP server that answers as registries do; the
// referrers themselves are read from a real registry in test/integration/image/signature-verify.test.ts.

const D = `sha256:${'a'.repeat(64)}`;
const INDEX = JSON.stringify({
  schemaVersion: 2,
  manifests: [{ mediaType: 'm', digest: D, size: 1, artifactType: 't' }],
});
const seen: { url: string; auth?: string }[] = [];
const PASSWORD = 'pa55-not-to-be-printed';
const ALICE = `Basic ${Buffer.from(`alice:${PASSWORD}`).toString('base64')}`;
/** A store that has `login` for every host. */
const logins = (login?: RegistryLogin): RegistryCredentials => ({
  file: '/home/op/.docker/config.json',
  find: async () => (login ? { login, source: '/home/op/.docker/config.json (auths)' } : undefined),
});
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
  // Distribution with htpasswd: Basic, and only alice's password.
  '/v2/private/app/referrers': (req, res) => {
    if (req.headers.authorization === ALICE) {
      res.writeHead(200, { 'content-type': 'application/vnd.oci.image.index.v1+json' }).end(INDEX);
      return;
    }
    res.writeHead(401, { 'www-authenticate': 'Basic realm="registry"' }).end();
  },
  // Harbor's or Docker Hub's way for a private repository: a token realm that wants the login.
  '/v2/team/app/referrers': (req, res) => {
    if (req.headers.authorization !== 'Bearer team-token') {
      res.writeHead(401, { 'www-authenticate': `Bearer realm="${base}/login-token",service="reg"` });
      return res.end();
    }
    res.writeHead(200, { 'content-type': 'application/vnd.oci.image.index.v1+json' }).end(INDEX);
  },
  '/login-token': (req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const form = new URLSearchParams(body);
      const refresh = req.method === 'POST' && form.get('grant_type') === 'refresh_token';
      if (req.headers.authorization === ALICE || (refresh && form.get('refresh_token') === 'alice-refresh')) {
        res.end(JSON.stringify(refresh ? { access_token: 'team-token' } : { token: 'team-token' }));
        return;
      }
      res.writeHead(401).end();
    });
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
      `${base} requires credentials to read private/app (Basic); baton reads it anonymously here: mirror the image and its signatures where the operator can read them (push.images.mirrors)`,
    );
    const none = new RegistryClient({ mirrors: { 'reg.example': base }, credentials: logins() });
    await expect(none.referrers(ref('private/app'), D)).rejects.toThrow(
      `${base} requires credentials to read private/app (Basic); baton found no login for ${base.slice('http://'.length)} in /home/op/.docker/config.json: run \`docker login ${base.slice('http://'.length)}\`, or name a Docker config (push.images.credentials)`,
    );
  });

  test("answers Basic with the operator's login, and a token realm with it (Basic, or an identity token)", async () => {
    const basic: RegistryLogin = { kind: 'basic', username: 'alice', password: PASSWORD };
    const c = new RegistryClient({ mirrors: { 'reg.example': base }, credentials: logins(basic) });
    seen.length = 0;
    expect((await c.referrers(ref('private/app'), D)).map((d) => d.digest)).toEqual([D]);
    expect((await c.referrers(ref('team/app'), D)).map((d) => d.digest)).toEqual([D]);
    expect(seen.map((s) => `${s.url.split('?')[0]} ${s.auth === ALICE ? 'alice' : (s.auth ?? '-')}`)).toEqual([
      `/v2/private/app/referrers/${D} -`,
      `/v2/private/app/referrers/${D} alice`,
      `/v2/team/app/referrers/${D} -`,
      '/login-token alice',
      `/v2/team/app/referrers/${D} Bearer team-token`,
    ]);
    const refresh: RegistryLogin = { kind: 'identity-token', token: 'alice-refresh' };
    const viaToken = new RegistryClient({ mirrors: { 'reg.example': base }, credentials: logins(refresh) });
    expect((await viaToken.referrers(ref('team/app'), D)).map((d) => d.digest)).toEqual([D]);
  });

  test('names where a refused login came from, never the login itself', async () => {
    const wrong: RegistryLogin = { kind: 'basic', username: 'alice', password: `${PASSWORD}-old` };
    const c = new RegistryClient({ mirrors: { 'reg.example': base }, credentials: logins(wrong) });
    const basic = await c.referrers(ref('private/app'), D).catch((e: Error) => e.message);
    expect(basic).toBe(
      `${base} refused the login from /home/op/.docker/config.json (auths) for private/app (401); check it (\`docker login ${base.slice('http://'.length)}\`)`,
    );
    const realm = await c.referrers(ref('team/app'), D).catch((e: Error) => e.message);
    expect(realm).toBe(
      `${base} refused the login from /home/op/.docker/config.json (auths) for team/app (401); check it (\`docker login ${base.slice('http://'.length)}\`)`,
    );
    expect(`${basic} ${realm}`).not.toContain(PASSWORD);
  });

  test('never sends a login over plain http beyond loopback', async () => {
    const asked: string[] = [];
    // Nothing leaves the machine: a stand-in answers as a Basic registry would, and records what it was sent.
    const fetchStub = (async (url: string, init?: RequestInit) => {
      asked.push(`${url} ${new Headers(init?.headers).get('authorization') ?? '-'}`);
      return new Response(null, { status: 401, headers: { 'www-authenticate': 'Basic realm="r"' } });
    }) as typeof fetch;
    const c = new RegistryClient({
      mirrors: { 'reg.example': 'http://registry.internal:5000' },
      credentials: logins({ kind: 'basic', username: 'alice', password: PASSWORD }),
      fetch: fetchStub,
    });
    await expect(c.referrers(ref('private/app'), D)).rejects.toThrow(
      'http://registry.internal:5000 is read over http, and baton does not send the login from /home/op/.docker/config.json (auths) in the clear; name an https mirror (push.images.mirrors), or remove the login for registry.internal:5000',
    );
    expect(asked).toEqual([`http://registry.internal:5000/v2/private/app/referrers/${D} -`]);
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
