import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExecCredentialAuth } from './exec-credential.js';
import { clientsFromKubeconfigContent } from './kube-clients.js';

// The plugin runner alone, with a stand-in plugin; against the real apiserver in test/integration/kubeconfig.
let dir = '';
let plugin = '';
const SECRET = 'sekret-token-value-0123456789';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'exec-cred-'));
  plugin = join(dir, 'plugin');
  writeFileSync(
    plugin,
    `#!/usr/bin/env node
const fs = require('node:fs');
fs.appendFileSync(process.env.CALLS, (process.env.KUBERNETES_EXEC_INFO ?? '') + '\\n');
const mode = process.env.MODE ?? 'ok';
if (mode === 'garbage') { process.stdout.write('token=${SECRET}'); process.exit(0); }
const status = { token: '${SECRET}-' + fs.readFileSync(process.env.CALLS, 'utf8').split('\\n').filter(Boolean).length };
if (process.env.EXPIRES_IN) status.expirationTimestamp = new Date(Date.now() + Number(process.env.EXPIRES_IN) * 1000).toISOString();
process.stdout.write(JSON.stringify({ apiVersion: process.env.API_VERSION ?? 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status }));
`,
  );
  chmodSync(plugin, 0o755);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cluster: k8s.Cluster = { name: 'c', server: 'https://10.0.0.1:443', caData: 'Q0E=', skipTLSVerify: false };
let n = 0;
function user(
  env: Record<string, string>,
  extra: Record<string, unknown> = {},
): { user: k8s.User; calls: () => string[] } {
  const calls = join(dir, `calls-${n++}`);
  writeFileSync(calls, '');
  const exec = {
    apiVersion: 'client.authentication.k8s.io/v1',
    command: plugin,
    env: Object.entries({ ...env, CALLS: calls }).map(([name, value]) => ({ name, value })),
    ...extra,
  };
  return {
    user: { name: `u${n}`, exec } as unknown as k8s.User,
    calls: () => readFileSync(calls, 'utf8').split('\n').filter(Boolean),
  };
}

async function authorization(auth: ExecCredentialAuth, u: k8s.User): Promise<string> {
  const opts: RequestOptions = {};
  await auth.applyAuthentication(u, opts);
  return String((opts.headers as Record<string, string>).Authorization);
}

describe('ExecCredentialAuth', () => {
  it('keeps a credential without expiry and runs the plugin once for concurrent requests', async () => {
    const auth = new ExecCredentialAuth(() => cluster);
    const u = user({});
    const headers = await Promise.all([1, 2, 3].map(() => authorization(auth, u.user)));
    expect(new Set(headers)).toEqual(new Set([`Bearer ${SECRET}-1`]));
    expect(await authorization(auth, u.user)).toBe(`Bearer ${SECRET}-1`);
    expect(u.calls()).toHaveLength(1);
    expect(JSON.parse(u.calls()[0]!)).toEqual({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: { interactive: false },
    });
  });

  it('after a 401 drops the credential that was sent, so the next request runs the plugin again; a newer one stays', async () => {
    const auth = new ExecCredentialAuth(() => cluster);
    const u = user({});
    expect(await authorization(auth, u.user)).toBe(`Bearer ${SECRET}-1`);
    // A 401 for a credential already replaced (a concurrent request refreshed it) keeps the newer one.
    expect(auth.unauthorized(u.user.name, { token: `${SECRET}-0` })).toBe(true);
    expect(await authorization(auth, u.user)).toBe(`Bearer ${SECRET}-1`);
    expect(auth.unauthorized(u.user.name, { token: `${SECRET}-1` })).toBe(true);
    expect(await authorization(auth, u.user)).toBe(`Bearer ${SECRET}-2`);
    // Not knowing what was sent drops the cached one.
    expect(auth.unauthorized(u.user.name)).toBe(true);
    expect(await authorization(auth, u.user)).toBe(`Bearer ${SECRET}-3`);
    expect(u.calls()).toHaveLength(3);
    // A user whose credential no plugin gave: the 401 stands.
    expect(auth.unauthorized('someone-else')).toBe(false);
  });

  it('runs the plugin again once the credential is within 10 s of its expiry', async () => {
    let now = Date.now();
    const auth = new ExecCredentialAuth(
      () => cluster,
      undefined,
      () => now,
    );
    const u = user({ EXPIRES_IN: '60' });
    expect(await authorization(auth, u.user)).toBe(`Bearer ${SECRET}-1`);
    // The plugin stamped its expiry by the real clock, before this point: 60 s from then.
    now = Date.now();
    now += 40_000;
    expect(await authorization(auth, u.user)).toBe(`Bearer ${SECRET}-1`);
    now += 11_000;
    expect(await authorization(auth, u.user)).toBe(`Bearer ${SECRET}-2`);
  });

  it('tells the plugin the cluster only when it asks (provideClusterInfo)', async () => {
    const auth = new ExecCredentialAuth(() => cluster);
    const u = user(
      { API_VERSION: 'client.authentication.k8s.io/v1beta1' },
      {
        apiVersion: 'client.authentication.k8s.io/v1beta1',
        provideClusterInfo: true,
      },
    );
    await authorization(auth, u.user);
    expect(JSON.parse(u.calls()[0]!).spec).toEqual({
      interactive: false,
      cluster: { server: 'https://10.0.0.1:443', 'certificate-authority-data': 'Q0E=' },
    });
  });

  it('names the command and installHint of a missing plugin', async () => {
    const auth = new ExecCredentialAuth(() => cluster);
    const u = {
      name: 'gke',
      exec: {
        command: 'gke-gcloud-auth-plugin-missing',
        installHint: 'gcloud components install gke-gcloud-auth-plugin',
      },
    } as unknown as k8s.User;
    await expect(authorization(auth, u)).rejects.toThrow(
      'kubeconfig user "gke"\'s credential plugin `gke-gcloud-auth-plugin-missing` was not found on PATH; install it: gcloud components install gke-gcloud-auth-plugin',
    );
  });

  it('resolves a relative command against the kubeconfig folder', async () => {
    const auth = new ExecCredentialAuth(() => cluster, dir);
    const u = user({});
    (u.user.exec as { command: string }).command = './plugin';
    expect(await authorization(auth, u.user)).toBe(`Bearer ${SECRET}-1`);
  });

  it('never quotes the output of a plugin that printed no ExecCredential, nor one of the wrong apiVersion', async () => {
    const auth = new ExecCredentialAuth(() => cluster);
    const garbage = await authorization(auth, user({ MODE: 'garbage' }).user).catch((e: Error) => e.message);
    expect(garbage).toContain('not an ExecCredential JSON object (output not shown)');
    expect(garbage).not.toContain(SECRET);
    const wrong = await authorization(auth, user({ API_VERSION: 'client.authentication.k8s.io/v1beta1' }).user).catch(
      (e: Error) => e.message,
    );
    expect(wrong).toContain('but the kubeconfig asks for ExecCredential client.authentication.k8s.io/v1');
    expect(wrong).not.toContain(SECRET);
  });

  it('replaces client-node’s own exec authenticator in the clients baton builds', async () => {
    const u = user({});
    const c = clientsFromKubeconfigContent(
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:1', 'certificate-authority-data': 'Q0E=' } }],
        users: [{ name: 'u', user: { exec: u.user.exec } }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'c',
      }),
    );
    // Port 1 refuses the connection; the credential is fetched before the request is sent.
    await c.version.getCode().catch(() => undefined);
    await c.core.listNamespace().catch(() => undefined);
    expect(u.calls()).toHaveLength(1);
    expect(JSON.parse(u.calls()[0]!).kind).toBe('ExecCredential');
  });
});
