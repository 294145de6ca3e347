import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  clientsFromKubeconfigFile,
  expectedObjects,
  type KubeObject,
  ObjectWatch,
  readObject,
  serverSideApply,
} from '@baton/kube';
import { type Cluster, startCluster } from '@baton/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../support/kube.js';

// What the takeover wait reads from: each object followed by one watch against the real apiserver, so that waiting
// costs the apiserver nothing between changes (issue 26: it read every object every 250 ms before). And, on the same
// cluster, what the push's dry run and apply keep of a manifest that client-node's models do not know.
let cluster: Cluster;
let admin: ReturnType<typeof clientsFromKubeconfigFile>;

beforeAll(async () => {
  cluster = await startCluster({ node: 'kwok', nodes: 0 });
  admin = clientsFromKubeconfigFile(cluster.kubeconfigPath);
}, 180_000);

afterAll(async () => {
  admin?.rest.close();
  await cluster?.stop();
});

const cm = (name: string, value?: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'default' },
  ...(value === undefined ? {} : { data: { value } }),
});
const widget: KubeObject = { apiVersion: 'example.baton.dev/v1', kind: 'Widget', metadata: { name: 'w1' } };
const crd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.example.baton.dev' },
  spec: {
    group: 'example.baton.dev',
    scope: 'Cluster',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};
const apply = (o: object) => admin.rest.apply(o as never, { fieldManager: 'test' });
const data = (o: KubeObject | undefined) => (o as { data?: { value?: string } } | undefined)?.data?.value;

describe('ObjectWatch', () => {
  it('follows objects that exist, do not exist yet, and whose kind is not served yet, with one watch each', async () => {
    await apply(cm('present', 'one'));
    const startedAt = Date.now();
    const watch = await ObjectWatch.open(admin.rest, [cm('present'), cm('absent'), widget, cm('present')]);
    const read = (ref: KubeObject) => watch.read(ref, (r) => readObject(admin, r));
    try {
      expect(data(await read(cm('present')))).toBe('one');
      expect(await read(cm('absent'))).toBeUndefined();
      expect(await read(widget)).toBeUndefined();

      await apply(cm('absent', 'created'));
      await apply(cm('present', 'two'));
      await eventually(async () => data(await read(cm('absent'))) === 'created', 10_000, 'the created ConfigMap');
      await eventually(async () => data(await read(cm('present'))) === 'two', 10_000, 'the updated ConfigMap');
      await admin.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'present' });
      await eventually(async () => (await read(cm('present'))) === undefined, 10_000, 'the deleted ConfigMap');

      // A kind served only once its CRD is Established: the watch finds it without being reopened by hand.
      await apply(crd);
      await eventually(
        async () => {
          try {
            await apply({ ...widget, spec: { size: 3 } });
            return true;
          } catch {
            return false;
          }
        },
        30_000,
        'the Widget to be created',
      );
      await eventually(async () => (await read(widget)) !== undefined, 15_000, 'the watched Widget');

      // Between changes, nothing: the count stays where it is while nothing changes.
      const before = watch.requests;
      await sleep(3_000);
      expect(watch.requests).toBe(before);
      // One request per object (duplicates once), plus the Widget's once its kind was served.
      expect(watch.requests).toBeLessThanOrEqual(4);
    } finally {
      await watch.close();
    }
    // The apiserver's own count: the watch's requests by this user since it opened are its watches and nothing else.
    const events = readFileSync(cluster.auditLogPath!, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map(
        (l) => JSON.parse(l) as { auditID: string; verb: string; requestReceivedTimestamp: string; requestURI: string },
      )
      .filter(
        (e) =>
          Date.parse(e.requestReceivedTimestamp) >= startedAt && e.requestURI.includes('fieldSelector=metadata.name'),
      );
    const watches = new Set(events.filter((e) => e.verb === 'watch').map((e) => e.auditID));
    expect(watches.size).toBe(watch.requests);
    expect(events.filter((e) => e.verb === 'list')).toEqual([]);
  });
});

describe("the push keeps a manifest's fields that client-node's models do not know", () => {
  it('applies and reads a CRD with its schema defaults, enum and x-kubernetes-* keys, and a dry run answers them too', async () => {
    const widget = {
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
      properties: {
        size: { type: 'string', enum: ['small', 'large'], default: 'small' },
        replicas: { type: 'integer', default: 2 },
      },
    };
    const crd: KubeObject = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.test.baton.dev' },
      spec: {
        group: 'test.baton.dev',
        scope: 'Namespaced',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: widget } }],
      },
    };
    const schemaOf = (o: KubeObject | undefined) =>
      (o as unknown as { spec: { versions: { schema: { openAPIV3Schema: unknown } }[] } }).spec.versions[0]!.schema
        .openAPIV3Schema;
    const [dryRun] = await expectedObjects(admin, [crd], { fieldManager: 'baton-bootstrap' });
    expect(schemaOf(dryRun!.expected)).toEqual(widget);
    const [applied] = await serverSideApply(admin, [crd], { fieldManager: 'baton-bootstrap' });
    expect(schemaOf(applied)).toEqual(widget);
    expect(schemaOf(await readObject(admin, crd))).toEqual(widget);
  });
});
