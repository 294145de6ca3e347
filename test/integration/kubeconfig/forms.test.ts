import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { runHandoff } from '@baton/core';
import {
  clientsFromKubeconfigContent,
  clientsFromKubeconfigFile,
  clientsFromToken,
  type KubeClients,
} from '@baton/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { useHandoffCluster } from '../../support/handoff-cluster.js';
import { CLI, JWT_PATTERN, testHandoffDeps } from '../../support/handoff-run.js';
import { adminClients, statusOfCall } from '../../support/kube.js';

// Every kubeconfig form a managed cluster issues, against the real apiserver: exec credential plugins as
// `aws eks get-token`, `gke-gcloud-auth-plugin` and `kubelogin` write them (a stand-in plugin prints the
// ExecCredential: tokens of ServiceAccounts bound to cluster-admin, or the test bed's admin certificate), token and
// token-file users, tls-server-name, proxy-url and context selection; and no credential in any output.

const execFileAsync = promisify(execFile);
const NS = 'kubeconfig-forms';
const OPERATORS = ['op-a', 'op-b'] as const;

const h = useHandoffCluster();
let dir = '';
let plugin = '';
let server = '';
let caData = '';
const tokens: Record<string, string> = {};
let adminCert = '';
let adminKey = '';

/** The stand-in plugin: prints an ExecCredential and logs how it was called (argv, env, KUBERNETES_EXEC_INFO). */
const PLUGIN = `#!/usr/bin/env node
const fs = require('node:fs');
const cfg = JSON.parse(fs.readFileSync(process.env.STANDIN_CONFIG, 'utf8'));
const log = cfg.log;
const n = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\\n').filter(Boolean).length : 0;
fs.appendFileSync(log, JSON.stringify({ argv: process.argv.slice(2), execInfo: process.env.KUBERNETES_EXEC_INFO ?? null, profile: process.env.AWS_PROFILE ?? null }) + '\\n');
if (cfg.fail) { process.stderr.write('error: not logged in (run: login)\\n'); process.exit(3); }
const status = cfg.cert ? { clientCertificateData: cfg.cert, clientKeyData: cfg.key } : { token: cfg.tokens[n % cfg.tokens.length] };
if (cfg.expiresInSeconds) status.expirationTimestamp = new Date(Date.now() + cfg.expiresInSeconds * 1000).toISOString();
process.stdout.write(JSON.stringify({ apiVersion: cfg.apiVersion, kind: 'ExecCredential', status }));
`;

interface PluginCall {
  readonly argv: string[];
  readonly execInfo: string | null;
  readonly profile: string | null;
}

interface StandIn {
  readonly env: { name: string; value: string }[];
  calls(): PluginCall[];
}

let seq = 0;
/** A config and a call log for one use of the stand-in plugin. */
function standIn(o: {
  apiVersion: string;
  tokens?: string[];
  cert?: boolean;
  expiresInSeconds?: number;
  fail?: boolean;
}): StandIn {
  const id = seq++;
  const log = join(dir, `calls-${id}.jsonl`);
  const config = join(dir, `standin-${id}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      apiVersion: o.apiVersion,
      tokens: o.tokens ?? [tokens['op-a']],
      ...(o.cert ? { cert: adminCert, key: adminKey } : {}),
      ...(o.expiresInSeconds ? { expiresInSeconds: o.expiresInSeconds } : {}),
      ...(o.fail ? { fail: true } : {}),
      log,
    }),
  );
  return {
    env: [{ name: 'STANDIN_CONFIG', value: config }],
    calls: () =>
      readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as PluginCall),
  };
}

/** A kubeconfig with one cluster, one user and one context, as a managed service's CLI writes it. */
function kubeconfig(user: Record<string, unknown>, cluster: Record<string, unknown> = {}): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'managed', cluster: { server, 'certificate-authority-data': caData, ...cluster } }],
    users: [{ name: 'operator', user }],
    contexts: [{ name: 'managed', context: { cluster: 'managed', user: 'operator' } }],
    'current-context': 'managed',
  });
}

function writeKubeconfig(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

async function whoAmI(c: KubeClients): Promise<string> {
  const r = await c.authn.createSelfSubjectReview({ body: {} });
  return r.status?.userInfo?.username ?? '';
}

/** A ServiceAccount `name` in NS bound to cluster-admin, as an operator's identity; returns a token for it. */
async function clusterAdminOperator(admin: KubeClients, name: string): Promise<string> {
  await admin.core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name } } });
  await admin.rbac.createClusterRoleBinding({
    body: {
      metadata: { name: `${NS}-${name}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', name, namespace: NS }],
    },
  });
  const tr = await admin.core.createNamespacedServiceAccountToken({
    name,
    namespace: NS,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  return tr.status!.token;
}

/** Every credential the tests handed out: none may appear in any output. */
function expectNoCredential(text: string): void {
  for (const t of Object.values(tokens)) expect(text).not.toContain(t);
  expect(text).not.toContain(adminKey);
  expect(text).not.toMatch(JWT_PATTERN);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'baton-kubeconfig-'));
  plugin = join(dir, 'standin-plugin');
  writeFileSync(plugin, PLUGIN);
  chmodSync(plugin, 0o755);
  const admin = adminClients(h.cluster.kubeconfigPath);
  server = h.cluster.server;
  caData = h.cluster.caData;
  const adminKc = parse(readFileSync(h.cluster.kubeconfigPath, 'utf8')) as {
    users: { user: Record<string, string> }[];
  };
  // An ExecCredential carries PEM, not the kubeconfig's base64 of it.
  adminCert = Buffer.from(adminKc.users[0]!.user['client-certificate-data']!, 'base64').toString();
  adminKey = Buffer.from(adminKc.users[0]!.user['client-key-data']!, 'base64').toString();
  await admin.core.createNamespace({ body: { metadata: { name: NS } } });
  for (const name of OPERATORS) tokens[name] = await clusterAdminOperator(admin, name);
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const opA = `system:serviceaccount:${NS}:op-a`;
const opB = `system:serviceaccount:${NS}:op-b`;

describe('exec credential plugins', () => {
  it('aws eks get-token form (v1beta1, args, env) in --kubeconfig: the plugin gets its args, env and a non-interactive KUBERNETES_EXEC_INFO', async () => {
    const p = standIn({ apiVersion: 'client.authentication.k8s.io/v1beta1' });
    const args = ['--region', 'eu-west-1', 'eks', 'get-token', '--cluster-name', 'prod', '--output', 'json'];
    const path = writeKubeconfig(
      'eks.yaml',
      kubeconfig({
        exec: {
          apiVersion: 'client.authentication.k8s.io/v1beta1',
          command: plugin,
          args,
          env: [{ name: 'AWS_PROFILE', value: 'prod-admin' }, ...p.env],
          interactiveMode: 'IfAvailable',
          provideClusterInfo: false,
        },
      }),
    );
    const c = clientsFromKubeconfigFile(path);
    expect(await whoAmI(c)).toBe(opA);
    // A credential without expiry is kept: many calls, concurrent or not, run the plugin once.
    await Promise.all([whoAmI(c), c.version.getCode(), c.core.listNamespace()]);
    const calls = p.calls();
    expect(calls).toHaveLength(1);
    expect(calls[0]!.argv).toEqual(args);
    expect(calls[0]!.profile).toBe('prod-admin');
    expect(JSON.parse(calls[0]!.execInfo!)).toEqual({
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      kind: 'ExecCredential',
      spec: { interactive: false },
    });
  });

  it('gke-gcloud-auth-plugin form (provideClusterInfo) in cluster.kubeconfigContent: the plugin is told the cluster', async () => {
    const p = standIn({ apiVersion: 'client.authentication.k8s.io/v1beta1', tokens: [tokens['op-b']!] });
    const text = kubeconfig({
      exec: {
        apiVersion: 'client.authentication.k8s.io/v1beta1',
        command: plugin,
        installHint:
          'Install gke-gcloud-auth-plugin for use with kubectl by following https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin',
        provideClusterInfo: true,
        env: p.env,
      },
    });
    const c = clientsFromKubeconfigContent(text);
    expect(await whoAmI(c)).toBe(opB);
    const info = JSON.parse(p.calls()[0]!.execInfo!) as { spec: { cluster: Record<string, unknown> } };
    expect(info.spec.cluster).toEqual({ server, 'certificate-authority-data': caData });
  });

  it('kubelogin form (v1, a client certificate from the test bed PKI): the operator is the certificate', async () => {
    const p = standIn({ apiVersion: 'client.authentication.k8s.io/v1', cert: true });
    const path = writeKubeconfig(
      'aks.yaml',
      kubeconfig({
        exec: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: plugin,
          args: ['get-token', '--login', 'azurecli', '--server-id', '6dae42f8-4368-4678-94ff-3960e28e3630'],
          env: p.env,
          interactiveMode: 'IfAvailable',
          provideClusterInfo: false,
        },
      }),
    );
    expect(await whoAmI(clientsFromKubeconfigFile(path))).toBe('baton-admin');
    expect(p.calls()).toHaveLength(1);
  });

  it('runs the plugin again when its credential comes within the expiry margin during a run, and uses the new one', async () => {
    // 10 s of life against the 10 s margin: the credential is used for the call it was fetched for and is stale by the
    // next one, with no wait for the clock.
    const p = standIn({
      apiVersion: 'client.authentication.k8s.io/v1',
      tokens: [tokens['op-a']!, tokens['op-b']!],
      expiresInSeconds: 10,
    });
    const c = clientsFromKubeconfigContent(
      kubeconfig({
        exec: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, env: p.env, interactiveMode: 'Never' },
      }),
    );
    expect(await whoAmI(c)).toBe(opA);
    expect(await whoAmI(c)).toBe(opB);
    expect(p.calls()).toHaveLength(2);
  });

  it('runs the plugin again after a 401 (a token revoked before any expiry it gave) and sends the call once more: typed and REST clients', async () => {
    const admin = adminClients(h.cluster.kubeconfigPath);
    // Two operators whose tokens the test revokes in turn, by deleting their ServiceAccounts.
    const revocable: Record<string, string> = {};
    for (const name of ['op-c', 'op-d']) {
      revocable[name] = await clusterAdminOperator(admin, name);
      tokens[name] = revocable[name];
    }
    const revoke = async (name: string) => {
      await admin.core.deleteNamespacedServiceAccount({ name, namespace: NS });
      await expect
        .poll(() => statusOfCall(() => whoAmI(clientsFromToken(h.cluster, revocable[name]!))), {
          timeout: 30_000,
          interval: 500,
        })
        .toBe(401);
    };
    // No expiry given: without the 401 rule the first token would be kept for the life of the clients.
    const p = standIn({
      apiVersion: 'client.authentication.k8s.io/v1',
      tokens: [revocable['op-c']!, revocable['op-d']!, tokens['op-b']!],
    });
    const c = clientsFromKubeconfigContent(
      kubeconfig({
        exec: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, env: p.env, interactiveMode: 'Never' },
      }),
    );
    expect(await whoAmI(c)).toBe(`system:serviceaccount:${NS}:op-c`);
    await revoke('op-c');
    expect(await whoAmI(c)).toBe(`system:serviceaccount:${NS}:op-d`);
    await revoke('op-d');
    const review = await c.rest.call<{ status?: { userInfo?: { username?: string } } }>(
      'POST',
      '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    );
    expect(review.status?.userInfo?.username).toBe(opB);
    expect(p.calls()).toHaveLength(3);
    // A token user's 401 stands: the proof of a revocation depends on it.
    expect(await statusOfCall(() => whoAmI(clientsFromToken(h.cluster, revocable['op-c']!)))).toBe(401);
  });

  it('a missing plugin fails naming the command and its installHint; a failing one names the command and its error', async () => {
    const missing = clientsFromKubeconfigContent(
      kubeconfig({
        exec: {
          apiVersion: 'client.authentication.k8s.io/v1beta1',
          command: 'gke-gcloud-auth-plugin-not-installed',
          installHint: 'Install gke-gcloud-auth-plugin: gcloud components install gke-gcloud-auth-plugin',
        },
      }),
    );
    const err = await missing.version.getCode().then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).toContain('`gke-gcloud-auth-plugin-not-installed` was not found on PATH');
    expect(err?.message).toContain('gcloud components install gke-gcloud-auth-plugin');

    const p = standIn({ apiVersion: 'client.authentication.k8s.io/v1beta1', fail: true });
    const failing = clientsFromKubeconfigContent(
      kubeconfig({ exec: { apiVersion: 'client.authentication.k8s.io/v1beta1', command: plugin, env: p.env } }),
    );
    const err2 = await failing.version.getCode().then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err2?.message).toMatch(/credential plugin `.*standin-plugin` exited with 3: error: not logged in/);
  });

  it('baton up with a missing plugin exits non-zero naming the command and installHint, having written nothing', async () => {
    const path = writeKubeconfig(
      'missing.yaml',
      kubeconfig({
        exec: {
          apiVersion: 'client.authentication.k8s.io/v1beta1',
          command: 'aws-not-installed',
          args: ['eks', 'get-token', '--cluster-name', 'prod'],
          installHint:
            'Install the AWS CLI v2: https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html',
        },
      }),
    );
    const r = await execFileAsync(
      process.execPath,
      [CLI, 'up', '--plan', h.env.planPath, '--kubeconfig', path],
      // It must exit by itself once it has failed (a pending plugin timer once kept it alive for 120 s).
      { env: { ...process.env, HOME: dir }, timeout: 60_000 },
    ).then(
      () => ({ code: 0, stderr: '', killed: false }),
      (e: { code: number; stderr: string; killed: boolean }) => ({ code: e.code, stderr: e.stderr, killed: e.killed }),
    );
    expect(r.killed).toBe(false);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('`aws-not-installed` was not found on PATH');
    expect(r.stderr).toContain('Install the AWS CLI v2');
    const admin = adminClients(h.cluster.kubeconfigPath);
    const sas = await admin.core
      .listNamespacedServiceAccount({ namespace: 'baton-system' })
      .catch(() => ({ items: [] }));
    expect(sas.items.filter((s) => s.metadata?.name?.startsWith('baton-bootstrap-'))).toEqual([]);
  });
});

describe('token users, TLS server name, proxy and context', () => {
  it('token and token-file users (the file ends in a newline, as most do) pass preflight-level calls', async () => {
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, `${tokens['op-b']}\n`, { mode: 0o600 });
    expect(await whoAmI(clientsFromKubeconfigContent(kubeconfig({ token: tokens['op-a'] })))).toBe(opA);
    expect(
      await whoAmI(clientsFromKubeconfigFile(writeKubeconfig('tf.yaml', kubeconfig({ 'token-file': tokenFile })))),
    ).toBe(opB);
  });

  it('tls-server-name is what the serving certificate is checked against', async () => {
    const good = clientsFromKubeconfigContent(
      kubeconfig({ token: tokens['op-a'] }, { 'tls-server-name': 'kubernetes.default.svc' }),
    );
    expect(await whoAmI(good)).toBe(opA);
    const wrong = clientsFromKubeconfigContent(
      kubeconfig({ token: tokens['op-a'] }, { 'tls-server-name': 'not-the-apiserver.example' }),
    );
    await expect(wrong.version.getCode()).rejects.toThrow(/not-the-apiserver\.example|altnames|certificate/i);
  });

  it('proxy-url: every call goes through the CONNECT proxy, and the bootstrap clients (clientsFromToken) too, trusting the same CA', async () => {
    const proxy = await startConnectProxy();
    try {
      const p = standIn({ apiVersion: 'client.authentication.k8s.io/v1beta1' });
      const path = writeKubeconfig(
        'proxied.yaml',
        kubeconfig(
          { exec: { apiVersion: 'client.authentication.k8s.io/v1beta1', command: plugin, env: p.env } },
          {
            'proxy-url': proxy.url,
            'tls-server-name': 'kubernetes',
            'certificate-authority-data': undefined,
            'certificate-authority': join(h.cluster.dir, 'pki', 'ca.crt'),
          },
        ),
      );
      const operator = clientsFromKubeconfigFile(path);
      expect(await whoAmI(operator)).toBe(opA);
      const viaProxy = proxy.connects.length;
      expect(viaProxy).toBeGreaterThan(0);
      expect(proxy.connects.every((t) => t === new URL(server).host)).toBe(true);
      // The bootstrap token's clients: bearer only, same CA (a file here), server name and proxy; no plugin run.
      const boot = clientsFromToken(operator, tokens['op-b']!);
      expect(await whoAmI(boot)).toBe(opB);
      expect(proxy.connects.length).toBeGreaterThan(viaProxy);
      expect(p.calls()).toHaveLength(1);
    } finally {
      await proxy.stop();
    }
  });

  it('--context picks a context other than the current one; an unknown one is refused naming the choices', async () => {
    const doc = parse(kubeconfig({ token: tokens['op-a'] })) as Record<string, unknown[]>;
    doc.clusters!.push({
      name: 'gone',
      cluster: { server: 'https://127.0.0.1:1', 'certificate-authority-data': caData },
    });
    doc.contexts!.push({ name: 'gone', context: { cluster: 'gone', user: 'operator' } });
    const path = writeKubeconfig('two.yaml', stringify({ ...doc, 'current-context': 'gone' }));
    expect(await whoAmI(clientsFromKubeconfigFile(path, 'managed'))).toBe(opA);
    expect(() => clientsFromKubeconfigFile(path, 'staging')).toThrow(
      /has no context "staging"; choose one of: managed, gone/,
    );
  });
});

describe('a handoff whose operator authenticates through an exec plugin', () => {
  it('hands off with preflight, push, revoke and record as the plugin identity; the plugin re-runs as credentials expire; no credential in any output', async () => {
    const p = standIn({ apiVersion: 'client.authentication.k8s.io/v1beta1', expiresInSeconds: 13 });
    const path = writeKubeconfig(
      'exec-operator.yaml',
      kubeconfig({
        exec: {
          apiVersion: 'client.authentication.k8s.io/v1beta1',
          command: plugin,
          args: ['eks', 'get-token', '--cluster-name', 'prod'],
          env: p.env,
          provideClusterInfo: true,
        },
      }),
    );
    const { deps, captured } = testHandoffDeps(h.env.loaded, path);
    const s = await runHandoff(h.env.loaded, deps);
    expect(s.outcome, s.error).toBe('handed-off');
    expect(s.proof?.tokenReviewAuthenticated).toBe(false);
    // Preflight named the operator as the plugin's identity; the plugin ran again as its credential aged.
    expect(s).toMatchObject({ operator: opA });
    expect(p.calls().length).toBeGreaterThan(1);
    expectNoCredential(captured.text() + JSON.stringify(s) + readFileSync(h.env.auditLogPath, 'utf8'));
  });
});

/** A CONNECT proxy on loopback that records the targets it tunnels to. */
async function startConnectProxy(): Promise<{ url: string; connects: string[]; stop(): Promise<void> }> {
  const connects: string[] = [];
  // Tunnels are not the server's connections any more: close() would wait for the clients' kept-alive ones.
  const tunnels = new Set<{ destroy(): void }>();
  const srv: Server = createServer((_req, res) => {
    res.writeHead(405).end();
  });
  srv.on('connect', (req, client, head) => {
    const target = req.url ?? '';
    connects.push(target);
    tunnels.add(client);
    const [host, port] = target.split(':');
    const upstream = connect(Number(port), host!, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    tunnels.add(upstream);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    connects,
    stop: () =>
      new Promise<void>((r) => {
        for (const t of tunnels) t.destroy();
        srv.closeAllConnections();
        srv.close(() => r());
      }),
  };
}
