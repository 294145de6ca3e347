import { readFile } from 'node:fs/promises';
import { type Cluster, startCluster } from '@baton/testenv';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminClients, eventually, statusOfCall, tokenClients } from '../../support/kube.js';

// One cluster for the properties that later issues rely on: scheduling on kwok nodes, bound
// ServiceAccount tokens and their revocation, RBAC scoping, and the apiserver audit log. kwok: two nodes, to see a
// 2-replica Deployment spread (a bed has one real node).
let cluster: Cluster;
let admin: ReturnType<typeof adminClients>;

beforeAll(async () => {
  cluster = await startCluster({ node: 'kwok', nodes: 2 });
  admin = adminClients(cluster.kubeconfigPath);
});

afterAll(async () => {
  await cluster?.stop();
});

async function makeNamespace(name: string) {
  await admin.core.createNamespace({ body: { metadata: { name } } });
}

async function makeServiceAccount(namespace: string, name: string) {
  await admin.core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
}

/** A token bound to a throwaway Secret, exactly as the handoff engine mints its bootstrap credential. */
async function mintBoundToken(namespace: string, sa: string, secretName: string) {
  const secret = await admin.core.createNamespacedSecret({
    namespace,
    body: { metadata: { name: secretName }, type: 'Opaque' },
  });
  const tr = await admin.core.createNamespacedServiceAccountToken({
    namespace,
    name: sa,
    body: {
      spec: {
        expirationSeconds: 600,
        audiences: ['https://kubernetes.default.svc.cluster.local'],
        boundObjectRef: { kind: 'Secret', apiVersion: 'v1', name: secretName, uid: secret.metadata!.uid! },
      },
    },
  });
  return tr;
}

describe('a real local control plane', () => {
  it('reports the pinned Kubernetes version and RBAC authorization', async () => {
    const version = await admin.kc.makeApiClient(k8s.VersionApi).getCode();
    expect(version.gitVersion).toBe('v1.36.3');
    const nodes = await admin.core.listNode();
    expect(nodes.items).toHaveLength(2);
  });

  it('makes a 2-replica Deployment Available on kwok nodes', async () => {
    await makeNamespace('apps');
    await admin.apps.createNamespacedDeployment({
      namespace: 'apps',
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'web', image: 'registry.invalid/web:1' }] },
          },
        },
      },
    });
    await eventually(
      async () => {
        const d = await admin.apps.readNamespacedDeployment({ namespace: 'apps', name: 'web' });
        const available = d.status?.conditions?.find((c) => c.type === 'Available')?.status === 'True';
        return available && d.status?.availableReplicas === 2;
      },
      60_000,
      'Deployment apps/web Available with 2 replicas',
    );
    const pods = await admin.core.listNamespacedPod({ namespace: 'apps' });
    expect(pods.items.map((p) => p.status?.phase)).toEqual(['Running', 'Running']);
    expect(new Set(pods.items.map((p) => p.spec?.nodeName)).size).toBeGreaterThanOrEqual(1);
  });

  it('issues a Secret-bound 600 s token that authenticates, and stops authenticating once the Secret is deleted', async () => {
    await makeNamespace('tokens');
    await makeServiceAccount('tokens', 'bootstrap');
    const tr = await mintBoundToken('tokens', 'bootstrap', 'bootstrap-anchor');
    const token = tr.status!.token;
    const lifetimeSeconds = (new Date(tr.status!.expirationTimestamp).getTime() - Date.now()) / 1000;
    expect(lifetimeSeconds).toBeGreaterThan(590);
    expect(lifetimeSeconds).toBeLessThanOrEqual(601);

    const asToken = tokenClients(cluster.kubeconfigPath, token);
    const review = await asToken.authn.createSelfSubjectReview({ body: {} });
    expect(review.status?.userInfo?.username).toBe('system:serviceaccount:tokens:bootstrap');

    // A shorter lifetime is refused by the API: 600 s is the floor the handoff relies on.
    await expect(
      admin.core.createNamespacedServiceAccountToken({
        namespace: 'tokens',
        name: 'bootstrap',
        body: { spec: { expirationSeconds: 599, audiences: [] } },
      }),
    ).rejects.toThrow(/10 minutes|600/);

    await admin.core.deleteNamespacedSecret({ namespace: 'tokens', name: 'bootstrap-anchor' });
    // Successful token checks are cached for 10 s: poll for the 401, don't sleep blindly.
    const elapsedMs = await eventually(
      async () => (await statusOfCall(() => asToken.authn.createSelfSubjectReview({ body: {} }))) === 401,
      15_000,
      'the revoked token to get 401',
      250,
    );
    expect(elapsedMs).toBeLessThan(15_000);
    const tokenReview = await admin.authn.createTokenReview({ body: { spec: { token } } });
    // The apiserver omits `authenticated: false` (omitempty); what matters is: not authenticated, no user.
    expect(tokenReview.status?.authenticated ?? false).toBe(false);
    expect(tokenReview.status?.user?.username).toBeUndefined();
    // Before the deletion the same review said yes: the check above is not vacuous.
    expect(review.status?.userInfo?.uid).toBeTruthy();
  });

  it('denies a narrowly bound identity outside its Role, and revokes it when the RoleBinding goes', async () => {
    await makeNamespace('scoped');
    await makeServiceAccount('scoped', 'reader');
    await admin.rbac.createNamespacedRole({
      namespace: 'scoped',
      body: {
        metadata: { name: 'cm-reader' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
      },
    });
    await admin.rbac.createNamespacedRoleBinding({
      namespace: 'scoped',
      body: {
        metadata: { name: 'cm-reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'cm-reader' },
        subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: 'scoped' }],
      },
    });
    const tr = await admin.core.createNamespacedServiceAccountToken({
      namespace: 'scoped',
      name: 'reader',
      body: { spec: { expirationSeconds: 600, audiences: [] } },
    });
    const as = tokenClients(cluster.kubeconfigPath, tr.status!.token);

    await eventually(
      async () => (await statusOfCall(() => as.core.listNamespacedConfigMap({ namespace: 'scoped' }))) === 200,
      10_000,
      'RBAC grant visible',
    );
    expect(await statusOfCall(() => as.core.listNamespacedSecret({ namespace: 'kube-system' }))).toBe(403);
    expect(await statusOfCall(() => as.core.listNamespacedConfigMap({ namespace: 'default' }))).toBe(403);
    expect(
      await statusOfCall(() =>
        as.core.createNamespacedPod({
          namespace: 'default',
          body: { metadata: { name: 'x' }, spec: { containers: [{ name: 'x', image: 'x' }] } },
        }),
      ),
    ).toBe(403);

    await admin.rbac.deleteNamespacedRoleBinding({ namespace: 'scoped', name: 'cm-reader' });
    const ms = await eventually(
      async () => (await statusOfCall(() => as.core.listNamespacedConfigMap({ namespace: 'scoped' }))) === 403,
      5_000,
      'access revoked after the RoleBinding was deleted',
      100,
    );
    expect(ms).toBeLessThan(5_000);
  });

  it('records requests of a ServiceAccount, with its username, in the apiserver audit log', async () => {
    await makeNamespace('audited');
    await makeServiceAccount('audited', 'probe');
    const tr = await admin.core.createNamespacedServiceAccountToken({
      namespace: 'audited',
      name: 'probe',
      body: { spec: { expirationSeconds: 600, audiences: [] } },
    });
    const as = tokenClients(cluster.kubeconfigPath, tr.status!.token);
    expect(await statusOfCall(() => as.core.readNamespace({ name: 'kube-system' }))).toBe(403);

    const lines = (await readFile(cluster.auditLogPath!, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as AuditEvent);
    const mine = lines.filter((e) => e.user?.username === 'system:serviceaccount:audited:probe');
    expect(mine.length).toBeGreaterThan(0);
    const denied = mine.find((e) => e.objectRef?.resource === 'namespaces' && e.objectRef.name === 'kube-system');
    expect(denied?.responseStatus?.code).toBe(403);
    expect(denied?.level).toBe('Metadata');
    // The token's credential id lets the handoff prove which credential made which request.
    expect(denied?.user?.extra?.['authentication.kubernetes.io/credential-id']?.[0]).toMatch(/^JTI=/);
  });
});

interface AuditEvent {
  level: string;
  user?: { username?: string; extra?: Record<string, string[]> };
  objectRef?: { resource?: string; name?: string; namespace?: string };
  responseStatus?: { code?: number };
}
