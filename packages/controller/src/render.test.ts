import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@baton/errors';
import { afterEach, describe, expect, it } from 'vitest';
import { objectId, parseObjectId, renderDirectory, renderYaml } from './render.js';

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('renderYaml', () => {
  it('splits documents, drops empty ones and expands List', () => {
    const text =
      '---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: s}}\n';
    expect(renderYaml(text, 'f.yaml').map((r) => `${r.object.kind}/${r.object.metadata.name}@${r.source.doc}`)).toEqual(
      ['ConfigMap/a@0', 'Secret/s@2'],
    );
  });

  it('reads YAML 1.1 as kubectl does (yes is a boolean)', () => {
    const [r] = renderYaml('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nx: yes\n', 'f.yaml');
    expect(r?.object.x).toBe(true);
  });

  it('names the file, document and line of invalid YAML', () => {
    expect(() =>
      renderYaml(
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\nmetadata:\n  name: [oops\n',
        'apps/bad.yaml',
      ),
    ).toThrow(/apps\/bad\.yaml: document 1 \(line \d+\): invalid YAML/);
  });

  it('rejects a document without metadata.name or with generateName', () => {
    expect(() => renderYaml('apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n', 'x.yaml')).toThrow(ConfigError);
    expect(() => renderYaml('apiVersion: v1\nkind: Pod\nmetadata: {name: a, generateName: a-}\n', 'x.yaml')).toThrow(
      /generateName/,
    );
  });
});

describe('renderDirectory', () => {
  it('sorts files, skips hidden folders, and puts CRDs and Namespaces first', async () => {
    dir = await mkdtemp(join(tmpdir(), 'render-'));
    await mkdir(join(dir, 'p/.github'), { recursive: true });
    await mkdir(join(dir, 'p/b'), { recursive: true });
    await writeFile(join(dir, 'p/.github/x.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hidden}\n');
    await writeFile(
      join(dir, 'p/a.yaml'),
      'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: apps}\n',
    );
    await writeFile(
      join(dir, 'p/b/c.yml'),
      'apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x.y}\n',
    );
    await writeFile(join(dir, 'p/readme.md'), '# not yaml');
    const out = await renderDirectory(dir, 'p');
    expect(out.map((r) => `${r.object.kind}:${r.source.file}`)).toEqual([
      'CustomResourceDefinition:p/b/c.yml',
      'Namespace:p/b/c.yml',
      'Deployment:p/a.yaml',
    ]);
  });

  it('refuses a path outside the repository', async () => {
    dir = await mkdtemp(join(tmpdir(), 'render-'));
    await expect(renderDirectory(dir, '../etc')).rejects.toThrow(/leaves the repository/);
  });
});

describe('objectId', () => {
  it('round-trips grouped and core kinds', () => {
    const id = objectId({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'demo' } });
    expect(id).toBe('apps/v1/Deployment/demo/web');
    expect(parseObjectId(id)).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'demo', name: 'web' });
    expect(parseObjectId('v1/Namespace//demo')).toEqual({
      apiVersion: 'v1',
      kind: 'Namespace',
      namespace: undefined,
      name: 'demo',
    });
  });
});
