import { createHmac } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderDirectory } from '@baton/controller';
import { KubeRestClient, type RestObject } from '@baton/kube/rest';
import { type Cluster, startCluster } from '@baton/testenv';
import { type GitServer, startGitServer } from '@baton/testenv/git';
import { stringify } from 'yaml';

const ROOT = new URL('../../../', import.meta.url).pathname;
/** Where the push manifests live. */
export const CONTROLLER_MANIFESTS = join(ROOT, 'bootstrap-manifests/baton-controller');
/** The folder the GitSync applies. */
export const CLUSTER_PATH = 'clusters/demo';
export const NS = 'baton-system';
export const WEBHOOK_SECRET = 'whsec-test-4b1d9c2e';

/** A cluster, a Git server with one repository, and an admin client. */
export interface ControllerEnv {
  readonly cluster: Cluster;
  readonly git: GitServer;
  readonly admin: KubeRestClient;
  readonly repo: string;
  readonly workDirs: string[];
  stop(): Promise<void>;
}

/**
 * Starts a 1-node cluster and a Git server with an empty repository `cluster-config`. The controller's own tests run
 * it as a process against the real apiserver (as envtest runs a controller), to reach its internals: kwok's node is
 * enough; the image on a real node is tested by the handoff suite (test/integration/gitops/baton-controller-handoff.test.ts).
 */
export async function startControllerEnv(): Promise<ControllerEnv> {
  const [cluster, git] = await Promise.all([startCluster({ node: 'kwok', nodes: 1 }), startGitServer()]);
  await git.createRepo('cluster-config');
  const admin = KubeRestClient.fromKubeconfig(cluster.kubeconfigPath);
  const workDirs: string[] = [];
  return {
    cluster,
    git,
    admin,
    repo: 'cluster-config',
    workDirs,
    async stop() {
      admin.close();
      await Promise.allSettled([
        cluster.stop(),
        git.stop(),
        ...workDirs.map((d) => rm(d, { recursive: true, force: true })),
      ]);
    },
  };
}

/** The controller's push set with the GitSync pointed at `repoUrl` (as the push would render it). */
export async function controllerManifests(repoUrl: string, intervalSeconds = 5): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const f of (await readdir(CONTROLLER_MANIFESTS)).filter((f) => f.endsWith('.yaml')).sort()) {
    let text = await readFile(join(CONTROLLER_MANIFESTS, f), 'utf8');
    if (f.endsWith('gitsync.yaml')) {
      text = text
        .replace(/url: .*/, `url: ${repoUrl}`)
        .replace(/intervalSeconds: .*/, `intervalSeconds: ${intervalSeconds}`);
    }
    out[`${CLUSTER_PATH}/baton-controller/${f}`] = text;
  }
  return out;
}

/** Server-side applies YAML files in the controller's order as `baton-bootstrap`, as the push does. */
export async function pushAsBootstrap(kube: KubeRestClient, files: Record<string, string>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'baton-push-'));
  try {
    for (const [p, text] of Object.entries(files)) {
      await mkdir(join(dir, p, '..'), { recursive: true });
      await writeFile(join(dir, p), text);
    }
    for (const r of await renderDirectory(dir, '.')) {
      await applyWithRetry(kube, r.object);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function applyWithRetry(kube: KubeRestClient, obj: RestObject) {
  // A CR right after its CRD: discovery needs a moment until the CRD is Established.
  for (let i = 0; ; i++) {
    try {
      await kube.apply(obj, { fieldManager: 'baton-bootstrap', force: true });
      return;
    } catch (err) {
      if (i > 50) throw err;
      kube.forgetDiscovery();
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** Creates (or replaces) an Opaque Secret. */
export async function putSecret(
  kube: KubeRestClient,
  namespace: string,
  name: string,
  data: Record<string, string>,
): Promise<void> {
  await kube.apply(
    { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, type: 'Opaque', stringData: data } as RestObject,
    { fieldManager: 'baton-bootstrap', force: true },
  );
  // stringData merges into data; rewrite data wholesale so removed keys go away.
  await kube.call('PUT', `/api/v1/namespaces/${namespace}/secrets/${name}`, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    type: 'Opaque',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  });
}

/** A TokenRequest token for a ServiceAccount (optionally bound to a Secret, so deleting it revokes the token). */
export async function mintToken(
  kube: KubeRestClient,
  namespace: string,
  sa: string,
  boundSecret?: { name: string; uid: string },
): Promise<string> {
  const tr = await kube.call<{ status: { token: string } }>(
    'POST',
    `/api/v1/namespaces/${namespace}/serviceaccounts/${sa}/token`,
    {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        expirationSeconds: 3600,
        ...(boundSecret ? { boundObjectRef: { kind: 'Secret', apiVersion: 'v1', ...boundSecret } } : {}),
      },
    },
  );
  return tr.status.token;
}

/**
 * Writes `token` to `<dir>/token` (0600) and a kubeconfig `<dir>/kubeconfig` whose user reads it (`tokenFile`), for
 * the controller run as its own process; returns the kubeconfig's path.
 */
export async function writeTokenKubeconfig(dir: string, cluster: Cluster, token: string): Promise<string> {
  const tokenFile = join(dir, 'token');
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(tokenFile, token, { mode: 0o600 });
  await writeFile(
    kubeconfig,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: cluster.server, 'certificate-authority-data': cluster.caData } }],
      users: [{ name: 'u', user: { tokenFile } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'c',
    }),
  );
  return kubeconfig;
}

/** A client that authenticates with `token` only, against the cluster's server and CA. */
export function tokenClient(cluster: Cluster, token: string): KubeRestClient {
  return new KubeRestClient({
    server: cluster.server,
    caPem: Buffer.from(cluster.caData, 'base64').toString('utf8'),
    token,
  });
}

/** Reads the GitSync's status. */
export async function gitSyncStatus(kube: KubeRestClient) {
  const gs = await kube.get<{ status?: import('@baton/controller').GitSyncStatus }>(
    `/apis/baton.dev/v1alpha1/namespaces/${NS}/gitsyncs/baton-controller`,
  );
  return gs?.status;
}

/** Calls the webhook with a valid (or, with `key`, another) HMAC signature. */
export async function callWebhook(controllerUrl: string, key = WEBHOOK_SECRET): Promise<number> {
  const body = JSON.stringify({ ref: 'refs/heads/main' });
  const sig = `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;
  const res = await fetch(`${controllerUrl}/webhook`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': sig },
  });
  await res.text();
  return res.status;
}

/** YAML of a ConfigMap, for commits in tests. */
export function configMapYaml(
  namespace: string,
  name: string,
  data: Record<string, string>,
  annotations?: Record<string, string>,
): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace, ...(annotations ? { annotations } : {}) },
    data,
  });
}
