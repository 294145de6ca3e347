import { join } from 'node:path';
import { checkTakeover, loadProfile, type RunningController } from '@baton/controller';
import {
  CLUSTER_PATH,
  type ControllerEnv,
  callWebhook,
  configMapYaml,
  gitSyncStatus,
  mintToken,
  NS,
  pushAsBootstrap,
  putSecret,
  startControllerEnv,
  tokenClient,
  WEBHOOK_SECRET,
} from '@baton/testbed';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/kube.js';
import { capturedLogger, condition, sourceRepoFiles, startTestController } from './harness.js';

// One cluster and one Git repository for the whole story, in order: push under a throwaway
// bootstrap credential, controller takes over, credential revoked, then the controller keeps
// operating the cluster from Git (poll, webhook, prune, self-heal, failures).
let env: ControllerEnv;
let controller: RunningController;
let controllerToken: string;
let bootstrapToken: string;
const logs = capturedLogger();
let lastGood = '';
const APPS = `${CLUSTER_PATH}/apps`;

async function readConfigMap(ns: string, name: string) {
  return env.admin.get<{
    data?: Record<string, string>;
    metadata: {
      resourceVersion: string;
      annotations?: Record<string, string>;
      managedFields?: { manager: string; operation: string }[];
    };
  }>(`/api/v1/namespaces/${ns}/configmaps/${name}`);
}

async function waitApplied(revision: string, timeoutMs = 20_000) {
  return eventually(
    async () => (await gitSyncStatus(env.admin))?.lastAppliedRevision === revision,
    timeoutMs,
    `GitSync to apply ${revision}`,
    50,
  );
}

beforeAll(async () => {
  env = await startControllerEnv();
  const files = await sourceRepoFiles(env.git.repoUrl(env.repo));
  lastGood = await env.git.commitFiles(env.repo, files, 'initial cluster config');

  // The push: a throwaway identity whose token is bound to a Secret, so deleting that Secret revokes it.
  await env.admin.apply(
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'baton-bootstrap' } },
    { fieldManager: 'test', force: true },
  );
  await env.admin.apply(
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'pusher', namespace: 'baton-bootstrap' } },
    { fieldManager: 'test', force: true },
  );
  await env.admin.apply(
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'baton-bootstrap-pusher' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', name: 'pusher', namespace: 'baton-bootstrap' }],
    },
    { fieldManager: 'test', force: true },
  );
  const binding = await env.admin.call('POST', '/api/v1/namespaces/baton-bootstrap/secrets', {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'pusher-binding' },
  });
  bootstrapToken = await mintToken(env.admin, 'baton-bootstrap', 'pusher', {
    name: 'pusher-binding',
    uid: binding.metadata.uid!,
  });
  const pusher = tokenClient(env.cluster, bootstrapToken);
  // The push installs the controller's set and one app object, which the controller must take over.
  const pushed = Object.fromEntries(
    Object.entries(files).filter(
      ([p]) => p.includes('/baton-controller/') || p.endsWith('settings.yaml') || p.endsWith('namespace.yaml'),
    ),
  );
  await pushAsBootstrap(pusher, pushed);
  await putSecret(pusher, NS, 'baton-pull-credential', {
    username: env.git.credentials.username,
    password: env.git.credentials.password,
  });
  await putSecret(pusher, NS, 'baton-webhook', { secret: WEBHOOK_SECRET });
  pusher.close();

  controllerToken = await mintToken(env.admin, NS, 'baton-controller');
  controller = await startTestController(env, controllerToken, logs.log);
});

afterAll(async () => {
  await controller?.stop();
  await env?.stop();
});

describe('baton-controller against a real cluster and a real Git server', () => {
  it('first sync applies the repository and takes ownership of the pushed objects from baton-bootstrap', async () => {
    await waitApplied(lastGood, 60_000);
    const status = await gitSyncStatus(env.admin);
    expect(condition(status, 'Ready')).toMatchObject({ status: 'True', reason: 'Succeeded' });
    expect(condition(status, 'Stalled')?.status).toBe('False');
    expect(status?.lastAttemptedRevision).toBe(lastGood);
    // 6 controller objects + CRD + GitSync + Namespace, ConfigMap, Deployment, Service of the app.
    expect(status?.inventoryCount).toBe(status?.inventory?.length);
    expect(status?.inventory).toEqual(
      expect.arrayContaining([
        'apps/v1/Deployment/baton-system/baton-controller',
        'v1/ConfigMap/demo/settings',
        'baton.dev/v1alpha1/GitSync/baton-system/baton-controller',
      ]),
    );

    for (const path of [
      `/api/v1/namespaces/demo/configmaps/settings`,
      `/apis/apps/v1/namespaces/${NS}/deployments/baton-controller`,
      `/apis/rbac.authorization.k8s.io/v1/clusterroles/baton-controller`,
    ]) {
      const obj = await env.admin.get(path);
      const managers = obj?.metadata.managedFields?.map((m) => `${m.manager}/${m.operation}`);
      expect(managers, path).toContain('baton-controller/Apply');
      expect(managers, path).not.toContain('baton-bootstrap/Apply');
    }
    const web = await env.admin.get('/apis/apps/v1/namespaces/demo/deployments/web');
    expect(web?.metadata.managedFields?.map((m) => m.manager)).toContain('baton-controller');

    // What the handoff engine waits for: the profile's rules, on the real objects.
    const profile = await loadProfile(
      join(new URL('../../../', import.meta.url).pathname, 'bootstrap-manifests/baton-controller'),
    );
    await eventually(
      async () => (await checkTakeover(profile, env.admin, lastGood)).isTakenOver,
      60_000,
      'baton-controller profile to report takeover',
      500,
    );

    const ready = await fetch(`${controller.url}/readyz`);
    expect(ready.status).toBe(200);
    const metrics = await (await fetch(`${controller.url}/metrics`)).text();
    expect(metrics).toMatch(/baton_controller_syncs_total\{result="success"\} [1-9]/);
    expect(metrics).toContain('baton_controller_leader 1');
    const events = await env.admin.call<{ items: { reason: string; message: string }[] }>(
      'GET',
      `/api/v1/namespaces/${NS}/events`,
    );
    expect(events.items.some((e) => e.reason === 'Applied' && e.message.includes(lastGood))).toBe(true);
  });

  it('keeps working after the bootstrap credential that installed it is revoked', async () => {
    await env.admin.call('DELETE', '/api/v1/namespaces/baton-bootstrap/secrets/pusher-binding');
    await env.admin.call('DELETE', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/baton-bootstrap-pusher');
    const pusher = tokenClient(env.cluster, bootstrapToken);
    await eventually(
      async () => (await pusher.raw('GET', '/api/v1/namespaces')).status === 401,
      10_000,
      'the bootstrap token to be rejected',
    );
    pusher.close();

    lastGood = await env.git.commitFiles(
      env.repo,
      { [`${APPS}/settings.yaml`]: configMapYaml('demo', 'settings', { greeting: 'after revocation' }) },
      'change after revocation',
    );
    expect(await callWebhook(controller.url)).toBe(202);
    await waitApplied(lastGood);
    expect((await readConfigMap('demo', 'settings'))?.data?.greeting).toBe('after revocation');
  });

  // How soon a poll or a webhook applies a commit is bench:controller's (pollLatencySeconds, webhookLatencySeconds):
  // a wall-clock bound here failed on a loaded CI machine. These prove what makes the controller sync.
  it('applies a new commit by polling, with no webhook call', async () => {
    lastGood = await env.git.commitFiles(
      env.repo,
      { [`${APPS}/settings.yaml`]: configMapYaml('demo', 'settings', { greeting: 'polled' }) },
      'poll',
    );
    await waitApplied(lastGood, 30_000);
    expect((await readConfigMap('demo', 'settings'))?.data?.greeting).toBe('polled');
  });

  it('applies a new commit on a signed webhook call when no poll is due for an hour, and rejects a bad signature', async () => {
    expect(await callWebhook(controller.url, 'wrong-key')).toBe(401);
    const gitSyncAt = async (intervalSeconds: number) => {
      const files = await sourceRepoFiles(env.git.repoUrl(env.repo), intervalSeconds);
      const path = Object.keys(files).find((p) => p.endsWith('gitsync.yaml'))!;
      lastGood = await env.git.commitFiles(env.repo, { [path]: files[path]! }, `poll every ${intervalSeconds} s`);
      expect(await callWebhook(controller.url)).toBe(202);
      await waitApplied(lastGood);
      // A sync reads the interval before it applies: one more sync (webhook-called, after this one has finished)
      // makes the new interval the wait.
      await eventually(async () => controller.lastSync?.revision === lastGood, 20_000, 'the sync to finish');
      const last = controller.lastSync?.syncId;
      expect(await callWebhook(controller.url)).toBe(202);
      await eventually(async () => controller.lastSync?.syncId !== last, 20_000, 'one more sync');
    };
    await gitSyncAt(3600);
    lastGood = await env.git.commitFiles(
      env.repo,
      { [`${APPS}/settings.yaml`]: configMapYaml('demo', 'settings', { greeting: 'webhook' }) },
      'webhook',
    );
    expect(await callWebhook(controller.url)).toBe(202);
    await waitApplied(lastGood, 60_000);
    expect((await readConfigMap('demo', 'settings'))?.data?.greeting).toBe('webhook');
    // Back to a poll every 5 s, which the tests after this one rely on.
    await gitSyncAt(5);
  });

  it('prunes a file removed from Git, but keeps an object annotated baton.dev/prune=disabled', async () => {
    lastGood = await env.git.commitFiles(
      env.repo,
      {
        [`${APPS}/extra.yaml`]: configMapYaml('demo', 'extra', { a: '1' }),
        [`${APPS}/kept.yaml`]: configMapYaml('demo', 'kept', { a: '1' }, { 'baton.dev/prune': 'disabled' }),
      },
      'add two',
    );
    await callWebhook(controller.url);
    await waitApplied(lastGood);
    expect(await readConfigMap('demo', 'extra')).toBeDefined();
    lastGood = await env.git.commitFiles(
      env.repo,
      { [`${APPS}/extra.yaml`]: null, [`${APPS}/kept.yaml`]: null },
      'remove two',
    );
    await callWebhook(controller.url);
    await waitApplied(lastGood);
    expect(await readConfigMap('demo', 'extra')).toBeUndefined();
    expect(await readConfigMap('demo', 'kept')).toBeDefined();
    const status = await gitSyncStatus(env.admin);
    expect(status?.inventory).not.toContain('v1/ConfigMap/demo/extra');
  });

  it('refuses to prune its own Deployment when it disappears from Git, and reports it', async () => {
    lastGood = await env.git.commitFiles(
      env.repo,
      { [`${CLUSTER_PATH}/baton-controller/40-deployment.yaml`]: null },
      'oops: remove the controller',
    );
    await callWebhook(controller.url);
    await waitApplied(lastGood);
    expect(await env.admin.get(`/apis/apps/v1/namespaces/${NS}/deployments/baton-controller`)).toBeDefined();
    const status = await gitSyncStatus(env.admin);
    expect(status?.pruneRefused).toContain('apps/v1/Deployment/baton-system/baton-controller');
    expect(condition(status, 'Ready')?.message).toContain('refused to prune');
    const files = await sourceRepoFiles(env.git.repoUrl(env.repo));
    const dep = `${CLUSTER_PATH}/baton-controller/40-deployment.yaml`;
    lastGood = await env.git.commitFiles(env.repo, { [dep]: files[dep]! }, 'restore the controller');
    await callWebhook(controller.url);
    await waitApplied(lastGood);
  });

  it('reverts a manual edit (and a manual delete) of a managed object at the next sync and reports the drift', async () => {
    await env.admin.call(
      'PATCH',
      '/api/v1/namespaces/demo/configmaps/settings?fieldManager=kubectl-edit',
      { data: { greeting: 'hand-edited' } },
      'application/merge-patch+json',
    );
    expect((await readConfigMap('demo', 'settings'))?.data?.greeting).toBe('hand-edited');
    await callWebhook(controller.url);
    await eventually(
      async () => (await readConfigMap('demo', 'settings'))?.data?.greeting === 'webhook',
      10_000,
      'the manual edit to be reverted',
    );
    await eventually(
      async () => (await gitSyncStatus(env.admin))?.driftedObjects?.includes('v1/ConfigMap/demo/settings') === true,
      10_000,
      'drift to be reported',
    );
    // A managed object deleted by hand comes back at the next sync.
    await env.admin.call('DELETE', '/api/v1/namespaces/demo/configmaps/settings');
    await callWebhook(controller.url);
    await eventually(
      async () => (await readConfigMap('demo', 'settings'))?.data?.greeting === 'webhook',
      10_000,
      'the deleted object to be re-created',
    );
  });

  it('a broken YAML file sets Ready=False naming the file, and the last good state stays applied', async () => {
    const bad = await env.git.commitFiles(
      env.repo,
      {
        [`${APPS}/broken.yaml`]:
          'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\n  namespace: demo\ndata: [unclosed\n',
        [`${APPS}/settings.yaml`]: configMapYaml('demo', 'settings', { greeting: 'never applied' }),
      },
      'broken yaml',
    );
    await callWebhook(controller.url);
    await eventually(
      async () => (await gitSyncStatus(env.admin))?.lastAttemptedRevision === bad,
      10_000,
      'the broken revision to be attempted',
    );
    await eventually(
      async () => condition(await gitSyncStatus(env.admin), 'Ready')?.status === 'False',
      10_000,
      'Ready=False',
    );
    const status = await gitSyncStatus(env.admin);
    expect(condition(status, 'Ready')?.reason).toBe('RenderFailed');
    expect(condition(status, 'Ready')?.message).toContain(`${APPS}/broken.yaml`);
    expect(status?.lastAppliedRevision).toBe(lastGood);
    expect(status?.lastError).toContain('broken.yaml');
    expect((await readConfigMap('demo', 'settings'))?.data?.greeting).toBe('webhook');
    lastGood = await env.git.commitFiles(
      env.repo,
      {
        [`${APPS}/broken.yaml`]: null,
        [`${APPS}/settings.yaml`]: configMapYaml('demo', 'settings', { greeting: 'webhook' }),
      },
      'fix yaml',
    );
    await callWebhook(controller.url);
    await waitApplied(lastGood);
    expect(condition(await gitSyncStatus(env.admin), 'Ready')?.status).toBe('True');
  });

  it('an object the controller may not create sets Ready=False naming file and object, and writes nothing of that revision', async () => {
    const priorityClass =
      'apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: high\nvalue: 1000\n';
    const bad = await env.git.commitFiles(
      env.repo,
      {
        [`${APPS}/priority.yaml`]: priorityClass,
        [`${APPS}/settings.yaml`]: configMapYaml('demo', 'settings', { greeting: 'never applied' }),
      },
      'forbidden kind',
    );
    await callWebhook(controller.url);
    await eventually(
      async () =>
        (await gitSyncStatus(env.admin))?.lastAttemptedRevision === bad &&
        condition(await gitSyncStatus(env.admin), 'Ready')?.status === 'False',
      10_000,
      'Ready=False',
    );
    const status = await gitSyncStatus(env.admin);
    const ready = condition(status, 'Ready');
    expect(ready?.reason).toBe('ValidationFailed');
    expect(ready?.message).toContain(`${APPS}/priority.yaml`);
    expect(ready?.message).toContain('PriorityClass high');
    expect(ready?.message).toContain('forbidden');
    expect(condition(status, 'Stalled')?.status).toBe('False');
    expect(status?.lastAppliedRevision).toBe(lastGood);
    expect((await readConfigMap('demo', 'settings'))?.data?.greeting).toBe('webhook');
    const events = await env.admin.call<{ items: { reason: string; type: string; message: string }[] }>(
      'GET',
      `/api/v1/namespaces/${NS}/events`,
    );
    expect(
      events.items.some(
        (e) => e.type === 'Warning' && e.reason === 'ValidationFailed' && e.message.includes('priority.yaml'),
      ),
    ).toBe(true);
    lastGood = await env.git.commitFiles(
      env.repo,
      {
        [`${APPS}/priority.yaml`]: null,
        [`${APPS}/settings.yaml`]: configMapYaml('demo', 'settings', { greeting: 'webhook' }),
      },
      'revert',
    );
    await callWebhook(controller.url);
    await waitApplied(lastGood);
  });

  it('a sync with nothing new sends nothing and changes no resourceVersion', async () => {
    const list = async () => {
      const l = await env.admin.call<{ items: { metadata: { name: string; resourceVersion: string } }[] }>(
        'GET',
        '/api/v1/namespaces/demo/configmaps',
      );
      return Object.fromEntries(l.items.map((i) => [i.metadata.name, i.metadata.resourceVersion]));
    };
    const before = await list();
    const last = controller.lastSync?.syncId;
    expect(await callWebhook(controller.url)).toBe(202);
    await eventually(async () => controller.lastSync?.syncId !== last, 10_000, 'one more sync');
    expect(controller.lastSync).toMatchObject({ isOk: true, revision: lastGood, appliedCount: 0 });
    expect(await list()).toEqual(before);
  });

  it('never writes a token, password or webhook secret to its logs', async () => {
    const text = logs.text();
    expect(text).toContain('"syncId"');
    expect(text).toContain(`"revision":"${lastGood}"`);
    for (const secret of [controllerToken, bootstrapToken, env.git.credentials.password, WEBHOOK_SECRET]) {
      expect(text.includes(secret)).toBe(false);
    }
    const status = JSON.stringify(await gitSyncStatus(env.admin));
    expect(status.includes(env.git.credentials.password)).toBe(false);
  });
});
