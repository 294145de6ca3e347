import { execFileSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { type ManifestObject, readManifestDir } from '@baton/core';
import { clientsFromKubeconfigFile, type KubeClients, type KubeObject, serverSideApply } from '@baton/kube';
import type { KubeRestClient } from '@baton/kube/rest';
import { type Cluster, startCluster } from '@baton/testenv';
import { ensureFluxControllers, type FluxControllers, pushFluxImages } from '@baton/testenv/beds';
import { type GitServer, startGitServer } from '@baton/testenv/git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { eventually } from '../../support/kube.js';

// Real Flux on the real test bed: source-controller and kustomize-controller built from Go modules into images the
// bed's copy of the install set pins by digest, run by a real node's kubelet and containerd, pulling from a real git
// http-backend. The install set is applied with the operator's credential here; flux-handoff.test.ts hands it off.
const ROOT = new URL('../../../', import.meta.url).pathname;
const MANIFESTS = join(ROOT, 'bootstrap-manifests/flux');
const REPO_FIXTURE = join(ROOT, 'bootstrap-manifests/flux/example');
const NS = 'flux-system';
const REPO = 'cluster-config';
const OPERATOR = 'baton-operator';
const SYNC_KINDS = new Set(['GitRepository', 'Kustomization']);

type Condition = { type: string; status: string; reason?: string; message?: string };
type FluxStatus = {
  conditions?: Condition[];
  artifact?: { revision?: string };
  lastAppliedRevision?: string;
};
type Stored = KubeObject & {
  metadata: KubeObject['metadata'] & {
    labels?: Record<string, string>;
    managedFields?: { manager: string; operation: string }[];
  };
  status?: FluxStatus;
};

let flux: FluxControllers;
let cluster: Cluster;
let git: GitServer;
let http: KubeRestClient;
let clients: KubeClients;
/** Upstream image name → the bed's build of it, by digest. */
let images: Readonly<Record<string, string>>;

beforeAll(async () => {
  // A cold machine builds both controllers here (about 6 minutes on 2 cores); later runs reuse the cache.
  flux = await ensureFluxControllers();
  cluster = await startCluster({ node: 'real' });
  git = await startGitServer({ inBed: cluster.realNode! });
  images = await pushFluxImages(flux, cluster.realNode!);
  clients = clientsFromKubeconfigFile(cluster.kubeconfigPath);
  http = clients.rest;
  await git.createRepo(REPO);
}, 1_800_000);

afterAll(async () => {
  await Promise.allSettled([cluster?.stop(), git?.stop()]);
});

async function get<T>(path: string): Promise<T | undefined> {
  const res = await http.raw('GET', path);
  if (res.status === 404) return undefined;
  if (res.status !== 200) throw new Error(`GET ${path}: HTTP ${res.status}`);
  return res.body as T;
}

describe("Flux's CRDs as baton ships them", () => {
  it('bootstrap-manifests/flux/05-crds.generated.yaml is committed and is what the build takes from the module zips', () => {
    const rel = relative(ROOT, flux.crdsPath);
    expect(rel).toBe('bootstrap-manifests/flux/05-crds.generated.yaml');
    expect(execFileSync('git', ['ls-files', rel], { cwd: ROOT }).toString().trim()).toBe(rel);
    // The build has just (re)written the file: any difference from the commit is a stale commit.
    const diff = execFileSync('git', ['diff', '--stat', 'HEAD', '--', rel], { cwd: ROOT }).toString();
    expect(diff, `regenerate with \`pnpm baton testenv build --flux\` and commit ${rel}`).toBe('');
  });
});

const ready = (s: FluxStatus | undefined) => s?.conditions?.find((c) => c.type === 'Ready');
const gitRepository = () =>
  get<Stored>(`/apis/source.toolkit.fluxcd.io/v1/namespaces/${NS}/gitrepositories/flux-system`);
const kustomization = () =>
  get<Stored>(`/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/${NS}/kustomizations/flux-system`);

/** Files of the example repository, keyed by their path in Git. */
async function repoFiles(): Promise<Record<string, string>> {
  const dir = join(REPO_FIXTURE, 'clusters/demo');
  const out: Record<string, string> = {};
  for (const f of (await readdir(dir)).sort()) out[`clusters/demo/${f}`] = await readFile(join(dir, f), 'utf8');
  return out;
}

/**
 * The install set as the push would render it for this cluster: the GitRepository points at our Git server, and the
 * controllers' images are the bed's builds (upstream's digests cannot be pulled here).
 */
function installSet(): ManifestObject[] {
  const set = readManifestDir(MANIFESTS);
  for (const m of set) {
    const spec = m.object.spec as Record<string, unknown> | undefined;
    if (m.object.kind === 'Deployment' && spec) {
      const containers = (spec.template as { spec: { containers: { image: string }[] } }).spec.containers;
      for (const c of containers) {
        const name = Object.keys(images).find((n) => c.image.startsWith(`${n}:`) || c.image.startsWith(`${n}@`));
        if (name) c.image = images[name]!;
      }
    }
    if (m.object.kind === 'GitRepository' && spec) {
      spec.url = git.repoUrl(REPO);
      // Short intervals so the test sees a new commit and drift within seconds (upstream: 1m and 10m).
      spec.interval = '5s';
    }
    if (m.object.kind === 'Kustomization' && spec) spec.interval = '10s';
  }
  return set;
}

/** Counts `default` keys in every openAPIV3Schema (what kustomize-controller's defaults rely on). */
function countDefaults(node: unknown): number {
  if (Array.isArray(node)) return node.reduce((n: number, x) => n + countDefaults(x), 0);
  if (node === null || typeof node !== 'object') return 0;
  return Object.entries(node).reduce((n, [k, v]) => n + (k === 'default' ? 1 : 0) + countDefaults(v), 0);
}

describe('Flux (source-controller + kustomize-controller built from Go modules) on the test bed', () => {
  let revision: string;

  it('installs bootstrap-manifests/flux with the operator credential, CRD schemas intact', async () => {
    revision = await git.commitFiles(REPO, await repoFiles(), 'example apps');
    const set = installSet();
    const crdNames = set.filter((m) => m.object.kind === 'CustomResourceDefinition').map((m) => m.object.metadata.name);
    expect(crdNames.sort()).toEqual([
      'buckets.source.toolkit.fluxcd.io',
      'externalartifacts.source.toolkit.fluxcd.io',
      'gitrepositories.source.toolkit.fluxcd.io',
      'helmcharts.source.toolkit.fluxcd.io',
      'helmrepositories.source.toolkit.fluxcd.io',
      'kustomizations.kustomize.toolkit.fluxcd.io',
      'ocirepositories.source.toolkit.fluxcd.io',
    ]);

    await serverSideApply(
      clients,
      set.filter((m) => !SYNC_KINDS.has(m.object.kind)).map((m) => m.object),
      { fieldManager: OPERATOR },
    );
    await eventually(
      async () => {
        for (const name of crdNames) {
          const crd = await get<{ status?: { conditions?: Condition[] } }>(
            `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`,
          );
          if (crd?.status?.conditions?.find((c) => c.type === 'Established')?.status !== 'True') return false;
        }
        return true;
      },
      60_000,
      'the Flux CRDs to be Established',
    );

    // Every `default` of upstream's schemas must reach the API server: Flux reads defaulted fields (e.g. spec.timeout).
    const generated = parseAllDocuments(await readFile(flux.crdsPath, 'utf8'), { version: '1.1' }).map((d) => d.toJS());
    const expectedDefaults = countDefaults(generated.map((c) => c.spec.versions));
    let storedDefaults = 0;
    for (const name of crdNames) {
      const crd = await get<{ spec: { versions: unknown } }>(
        `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`,
      );
      storedDefaults += countDefaults(crd!.spec.versions);
    }
    expect(expectedDefaults).toBeGreaterThan(0);
    expect(storedDefaults).toBe(expectedDefaults);

    // The pull credential: push-only, never in Git.
    await serverSideApply(
      clients,
      [
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'flux-system', namespace: NS },
          stringData: { username: git.credentials.username, password: git.credentials.password },
        },
        ...set.filter((m) => SYNC_KINDS.has(m.object.kind)).map((m) => m.object),
      ],
      { fieldManager: OPERATOR },
    );
  });

  it('runs both controllers as their pods on the node, and Flux applies the commit from Git as kustomize-controller', async () => {
    const want = `main@sha1:${revision}`;

    await eventually(
      async () => {
        const s = (await gitRepository())?.status;
        return ready(s)?.status === 'True' && s?.artifact?.revision === want;
      },
      180_000,
      `GitRepository ${NS}/flux-system Ready on ${want}`,
      500,
    );
    await eventually(
      async () => {
        const s = (await kustomization())?.status;
        return ready(s)?.status === 'True' && s?.lastAppliedRevision === want;
      },
      180_000,
      `Kustomization ${NS}/flux-system Ready with lastAppliedRevision ${want}`,
      500,
    );
    // Both controllers run as containers of the bed's images, started by the real kubelet. Readiness trails the
    // first apply by a probe period: wait for it.
    const listPods = async () => (await clients.core.listNamespacedPod({ namespace: NS })).items;
    await eventually(
      async () => (await listPods()).every((p) => p.status?.containerStatuses?.[0]?.ready === true),
      60_000,
      'both Flux controllers Ready',
      500,
    );
    const pods = await listPods();
    expect(pods.map((p) => p.metadata?.labels?.app).sort()).toEqual(['kustomize-controller', 'source-controller']);
    for (const p of pods) {
      const c = p.status?.containerStatuses?.[0];
      expect(c?.ready, p.metadata?.name).toBe(true);
      expect(Object.values(images).map((i) => i.split('@')[1])).toContain(c?.imageID?.split('@')[1]);
    }

    for (const path of [
      '/api/v1/namespaces/flux-demo',
      '/api/v1/namespaces/flux-demo/serviceaccounts/web',
      '/api/v1/namespaces/flux-demo/configmaps/web-config',
      '/apis/apps/v1/namespaces/flux-demo/deployments/web',
    ]) {
      const o = await get<Stored>(path);
      expect(o, path).toBeDefined();
      expect(
        o!.metadata.managedFields?.some((f) => f.manager === 'kustomize-controller' && f.operation === 'Apply'),
        `${path} is applied by kustomize-controller`,
      ).toBe(true);
      expect(o!.metadata.labels?.['kustomize.toolkit.fluxcd.io/name'], path).toBe('flux-system');
    }
    const cm = await get<{ data: Record<string, string> }>('/api/v1/namespaces/flux-demo/configmaps/web-config');
    expect(cm?.data.greeting).toBe('hello from git');
  }, 420_000);

  it('applies a later commit, and reverts a manual change to an object it manages', async () => {
    const files = await repoFiles();
    const next = await git.commitFiles(
      REPO,
      { 'clusters/demo/apps.yaml': files['clusters/demo/apps.yaml']!.replace('hello from git', 'second commit') },
      'change greeting',
    );
    await eventually(
      async () => (await kustomization())?.status?.lastAppliedRevision === `main@sha1:${next}`,
      120_000,
      'the Kustomization to apply the second commit',
      500,
    );
    const cmPath = '/api/v1/namespaces/flux-demo/configmaps/web-config';
    expect((await get<{ data: Record<string, string> }>(cmPath))?.data.greeting).toBe('second commit');

    const res = await http.raw('DELETE', cmPath);
    expect(res.status).toBe(200);
    await eventually(
      async () => (await get<{ data: Record<string, string> }>(cmPath))?.data.greeting === 'second commit',
      120_000,
      'kustomize-controller to recreate the deleted ConfigMap from Git',
      500,
    );
  });

  it('applies only what the narrow flux-reconciler role allows: a Secret in Git fails the Kustomization', async () => {
    const next = await git.commitFiles(
      REPO,
      {
        'clusters/demo/secret.yaml':
          'apiVersion: v1\nkind: Secret\nmetadata:\n  name: not-allowed\n  namespace: flux-demo\nstringData:\n  k: v\n',
      },
      'a kind outside flux-reconciler',
    );
    await eventually(
      async () => {
        const s = (await kustomization())?.status;
        const r = ready(s);
        return r?.status === 'False' && (r.message ?? '').includes('not-allowed');
      },
      120_000,
      `the Kustomization to fail on main@sha1:${next} (Secret not allowed)`,
      500,
    );
    const r = ready((await kustomization())?.status)!;
    expect(r.message).toMatch(/forbidden/i);
    expect(await get('/api/v1/namespaces/flux-demo/secrets/not-allowed')).toBeUndefined();
  });
});
