import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { operatorClients } from './operator-clients.js';

// The operator's kubeconfig as kubectl reads it (issue 28): a KUBECONFIG list merged, first file wins per name,
// current-context from the first file that sets one, missing files skipped, an empty value meaning unset.
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function kubeconfig(dir: string, file: string, o: { server: string; context: string; current?: string }): string {
  const path = join(dir, file);
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: shared, cluster: {server: "${o.server}"}}, {name: ${o.context}-cluster, cluster: {server: "${o.server}/own"}}]`,
      `users: [{name: ${o.context}-user, user: {token: t}}]`,
      `contexts: [{name: ${o.context}, context: {cluster: shared, user: ${o.context}-user}}, {name: ${o.context}-own, context: {cluster: ${o.context}-cluster, user: ${o.context}-user}}]`,
      ...(o.current ? [`current-context: ${o.current}`] : []),
      '',
    ].join('\n'),
  );
  return path;
}

function temp(): string {
  const d = mkdtempSync(join(tmpdir(), 'baton-kubeconfig-'));
  dirs.push(d);
  return d;
}

describe('operatorClients reads KUBECONFIG as kubectl does', () => {
  it('merges a list: the first file wins per name, current-context from the first that sets one', () => {
    const d = temp();
    const a = kubeconfig(d, 'a', { server: 'https://a.example:6443', context: 'ctx-a' });
    const b = kubeconfig(d, 'b', { server: 'https://b.example:6443', context: 'ctx-b', current: 'ctx-b' });
    const c = operatorClients(undefined, undefined, undefined, { KUBECONFIG: `${a}:${join(d, 'missing')}:${b}` });
    // a sets no current-context, so b's applies; its cluster `shared` is a's (first file wins).
    expect(c.kc.getCurrentContext()).toBe('ctx-b');
    expect(c.server).toBe('https://a.example:6443');
    const own = operatorClients(undefined, undefined, 'ctx-b-own', { KUBECONFIG: `${a}:${b}` });
    expect(own.server).toBe('https://b.example:6443/own');
    const first = kubeconfig(d, 'c', { server: 'https://c.example:6443', context: 'ctx-c', current: 'ctx-c' });
    expect(
      operatorClients(undefined, undefined, undefined, { KUBECONFIG: `${first}:${b}` }).kc.getCurrentContext(),
    ).toBe('ctx-c');
  });

  it('an empty KUBECONFIG falls back to ~/.kube/config', () => {
    const home = temp();
    mkdirSync(join(home, '.kube'));
    kubeconfig(join(home, '.kube'), 'config', { server: 'https://home.example:6443', context: 'h', current: 'h' });
    const c = operatorClients(undefined, undefined, undefined, { KUBECONFIG: '', HOME: home });
    expect(c.server).toBe('https://home.example:6443');
  });

  it('names the list when none of its files exists', () => {
    const d = temp();
    expect(() =>
      operatorClients(undefined, undefined, undefined, { KUBECONFIG: `${join(d, 'x')}:${join(d, 'y')}` }),
    ).toThrow(/none of the kubeconfig files .*x, .*y exists \(KUBECONFIG\)/);
  });
});
