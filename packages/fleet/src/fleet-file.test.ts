import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '@baton/errors';
import { describe, expect, it } from 'vitest';
import { renderTargets } from './cluster-plans.js';
import { fleetJsonSchema, loadFleetFile, parseFleetText } from './fleet-file.js';
import { assignWaves, budgetCount, parseShard, shardWaves } from './waves.js';

const dir = fileURLToPath(new URL('../../../test/fixtures/fleet/', import.meta.url));
const file = `${dir}fleet.yaml`;

const inline = (body: string) => `apiVersion: baton.dev/v1alpha1
kind: Fleet
defaults: ./plan-template.yaml
${body}`;

describe('fleet file', () => {
  it('loads the five-line fleet file: defaults, waves, and one plan per cluster from the template', () => {
    const fleet = loadFleetFile(file);
    expect(fleet.name).toBe('fleet');
    expect(fleet.fleet.concurrency).toBe(4);
    expect(fleet.fleet.failureBudget).toBe(0);
    expect(fleet.fleet.retries).toBe(0);
    const targets = renderTargets(fleet);
    expect(targets.map((t) => t.name)).toEqual(['eu-1', 'eu-2', 'us-1']);
    const plan = targets[1]!.loaded.plan;
    expect(plan.cluster).toEqual({ name: 'eu-2', context: 'eu-2' });
    expect(plan.pull.source.path).toBe('clusters/eu-2');
    expect(plan.push.manifests).toBe(
      fileURLToPath(new URL('../../../test/fixtures/handoff/controller', import.meta.url)),
    );
    expect(targets[1]!.kubeconfig).toEqual({ kind: 'context', context: 'eu-2' });
    expect(assignWaves(file, fleet.fleet).map((w) => [w.name, w.clusters])).toEqual([
      ['canary', ['eu-1']],
      ['wave-2', ['eu-2', 'us-1']],
    ]);
  });

  it('names the file, the line, the cluster and the field of a bad cluster', () => {
    const text = inline(`clusters:
  - name: eu-1
    kubeconfig: ./a.yaml
  - name: eu-2
    kubeconfig: ./b.yaml
    secretRef: { name: eu-2-kubeconfig }
  - name: eu-3
    kubeconfg: ./c.yaml
`);
    const err = (() => {
      try {
        parseFleetText(text, `${dir}bad.yaml`);
      } catch (e) {
        return e as ConfigError;
      }
      throw new Error('accepted');
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toContain(`${dir}bad.yaml:9: cluster "eu-2" (clusters[1]) secretRef: set kubeconfig`);
    expect(err.message).toMatch(/bad\.yaml:10: cluster "eu-3" \(clusters\[2\]\).*kubeconfg/);
  });

  it('refuses a repeated cluster name and a bad budget', () => {
    expect(() => parseFleetText(inline('clusters: [{ name: a }, { name: a }]'), 'f.yaml')).toThrow(
      /cluster "a" \(clusters\[1\]\) name: repeats clusters\[0\]\.name/,
    );
    expect(() => parseFleetText(inline('clusters: [{ name: a }]\nfailureBudget: lots'), 'f.yaml')).toThrow(
      /failureBudget/,
    );
  });

  it('names the cluster and the field when the rendered plan breaks core’s schema', () => {
    const fleet = parseFleetText(
      inline(`clusters:
  - name: ok
  - name: slow
    overrides: { push: { budgetSeconds: 9000 } }
`),
      `${dir}f.yaml`,
    );
    expect(() => renderTargets(fleet)).toThrow(ConfigError);
    expect(() => renderTargets(fleet)).toThrow(
      /f\.yaml: cluster "slow" \(clusters\[1\]\): invalid handoff plan: .*push\.budgetSeconds/,
    );
  });

  it('fills {{labels.KEY}} and refuses a label the cluster lacks', () => {
    const ok = parseFleetText(
      `apiVersion: baton.dev/v1alpha1
kind: Fleet
defaults:
  ${readFileSync(`${dir}plan-template.yaml`, 'utf8')
    .split('\n')
    .filter((l) => !/^(#|apiVersion|kind|cluster:| {2}name: replaced)/.test(l))
    .join('\n  ')
    .replace('clusters/{{name}}', 'regions/{{labels.region}}/{{name}}')}
clusters: [{ name: a, labels: { region: eu } }, { name: b }]
`,
      `${dir}f.yaml`,
    );
    expect(() => renderTargets(ok)).toThrow(
      /cluster "b" \(clusters\[1\]\): pull\.source\.path: \{\{labels\.region\}\} names a label/,
    );
    const one = { ...ok, fleet: { ...ok.fleet, clusters: [ok.fleet.clusters[0]!] } };
    expect(renderTargets(one)[0]!.loaded.plan.pull.source.path).toBe('regions/eu/a');
  });

  it('keeps one audit log for the whole fleet', () => {
    const fleet = parseFleetText(
      inline(`clusters:
  - name: a
  - name: b
    overrides: { audit: { logPath: ./elsewhere.log } }
`),
      `${dir}f.yaml`,
    );
    expect(() => renderTargets(fleet)).toThrow(/cluster "b": audit differs from cluster "a"/);
  });

  it('publishes an up-to-date JSON Schema (regenerate: pnpm --filter @baton/fleet schemas)', () => {
    const committed = readFileSync(new URL('../schemas/fleet.schema.json', import.meta.url), 'utf8');
    expect(committed).toBe(`${JSON.stringify(fleetJsonSchema(), null, 2)}\n`);
  });
});

describe('waves, shards and budget', () => {
  const clusters = (n: number, label = (i: number) => (i < 2 ? 'canary' : 'main')) =>
    Array.from({ length: n }, (_, i) => ({ name: `c${i}`, labels: { ring: label(i) } }));

  it('takes by selector, count and percent from what earlier waves left', () => {
    const waves = assignWaves('f.yaml', {
      clusters: clusters(10),
      waves: [{ selector: { ring: 'canary' } }, { count: 3 }, { percent: 20, name: 'twenty' }, {}],
    });
    expect(waves.map((w) => w.clusters)).toEqual([
      ['c0', 'c1'],
      ['c2', 'c3', 'c4'],
      ['c5', 'c6'],
      ['c7', 'c8', 'c9'],
    ]);
    expect(waves.map((w) => w.name)).toEqual(['canary', 'wave-2', 'twenty', 'wave-4']);
  });

  it('refuses clusters left in no wave, and a selector that matches nothing', () => {
    expect(() => assignWaves('f.yaml', { clusters: clusters(3), waves: [{ count: 1 }] })).toThrow(
      /f\.yaml: waves: 2 cluster\(s\) are in no wave \(c1, c2\); add a last wave \{\}/,
    );
    expect(() => assignWaves('f.yaml', { clusters: clusters(3), waves: [{ selector: { ring: 'nope' } }, {}] })).toThrow(
      /waves\[0\] \(canary\): selector .* matches no cluster/,
    );
  });

  it('slices deterministically: shards i/n together cover every cluster exactly once', () => {
    const waves = assignWaves('f.yaml', { clusters: clusters(8), waves: [{ count: 1 }, {}] });
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      const mine = shardWaves(waves, parseShard(`${i}/3`));
      expect(shardWaves(waves, parseShard(`${i}/3`))).toEqual(mine);
      seen.push(...mine.flatMap((w) => w.clusters));
    }
    expect(seen.sort()).toEqual(
      clusters(8)
        .map((c) => c.name)
        .sort(),
    );
    expect(() => parseShard('3/3')).toThrow(/--shard 3\/3 is invalid/);
    expect(() => parseShard('1')).toThrow(ConfigError);
  });

  it('counts a percentage budget of the clusters this run hands off', () => {
    expect(budgetCount(2, 100)).toBe(2);
    expect(budgetCount('10%', 25)).toBe(2);
    expect(budgetCount('0%', 25)).toBe(0);
  });
});

describe('a fleet of any profile', () => {
  it('hands every cluster to Flux from a template without a controller block: each plan takes it from the profile', () => {
    const root = fileURLToPath(new URL('../../../', import.meta.url));
    const text = `apiVersion: baton.dev/v1alpha1
kind: Fleet
defaults:
  push: { credential: bootstrap-token, profile: flux, manifests: ./bootstrap-manifests/flux }
  pull:
    credential: { fromFile: ./pull.yaml }
    source: { url: https://git.example.org/fleet.git, path: 'clusters/{{name}}' }
  audit: { logPath: ./audit/handoffs.jsonl, signingKeyPath: ./audit/baton.key }
clusters: [{ name: eu-1, context: eu-1 }, { name: eu-2, context: eu-2, overrides: { controller: { privilege: cluster-admin } } }]
`;
    const targets = renderTargets(parseFleetText(text, `${root}fleet.yaml`));
    expect(targets.map((t) => t.loaded.plan.push.profile)).toEqual(['flux', 'flux']);
    const [eu1, eu2] = targets.map((t) => t.loaded.plan);
    expect(eu1!.controller).toMatchObject({
      name: 'kustomize-controller',
      namespace: 'flux-system',
      fieldManager: 'kustomize-controller',
      privilege: 'scoped',
      status: { kind: 'Kustomization', name: 'flux-system' },
    });
    expect(eu1!.pull.credential.secretName).toBe('flux-system');
    expect(eu1!.pull.source.path).toBe('clusters/eu-1');
    expect(eu2!.controller).toMatchObject({ name: 'kustomize-controller', privilege: 'cluster-admin' });
  });
});
