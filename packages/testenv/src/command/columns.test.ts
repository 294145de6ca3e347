// `baton testenv ls` and `nodes` at 80 and 130 columns (issue 32): no line wider than the screen, headers as words,
// ages relative, every value whole in -o wide.
import { renderRows, widestLine } from '@baton/terminal';
import { describe, expect, it } from 'vitest';
import { type ClusterRow, clusterColumns, type NodeRow, nodeColumns } from './columns.js';

const NOW = Date.parse('2026-12-05T10:00:00Z');
const clusters: ClusterRow[] = [
  {
    name: 'fleet-target-20261205094500-3f9a1c-0',
    status: 'running',
    server: 'https://10.250.0.6:18232',
    kubeconfigPath: '/root/.cache/baton/testenv/clusters/fleet-target-20261205094500-3f9a1c-0/admin.kubeconfig',
    auditLogPath: '/root/.cache/baton/testenv/clusters/fleet-target-20261205094500-3f9a1c-0/audit.log',
    startedAt: '2026-12-05T09:55:00.000Z',
  },
  {
    name: 'demo',
    status: 'stopped',
    server: 'https://127.0.0.1:20111',
    kubeconfigPath: '/root/.cache/baton/testenv/clusters/demo/admin.kubeconfig',
    startedAt: '2026-12-04T10:00:00.000Z',
  },
];
const nodes: NodeRow[] = [
  { name: 'fleet-target-0-node-0', ready: 'True', kubelet: 'v1.36.3', created: '2026-12-05T09:59:30.000Z' },
];

describe.each([80, 130])('at %i columns', (width) => {
  it('testenv ls: fits, AGE relative, the start time and audit log only in -o wide', () => {
    const out = renderRows(clusters, 'table', clusterColumns(NOW), { width });
    expect(widestLine(out)).toBeLessThanOrEqual(width);
    expect(out).toMatch(/^NAME +STATUS +AGE +SERVER/);
    expect(out).toMatch(/ running +5m +https:\/\/10\.250\.0\.6:18232/);
    expect(out).toMatch(/ stopped +24h +/);
    expect(out).not.toContain('STARTED AT');
    const wide = renderRows(clusters, 'wide', clusterColumns(NOW), { width });
    for (const c of clusters)
      for (const v of [c.name, c.kubeconfigPath, c.startedAt!, c.server]) expect(wide).toContain(v);
    expect(wide).toContain(clusters[0]!.auditLogPath!);
  });

  it('testenv nodes: kubectl get nodes columns', () => {
    const out = renderRows(nodes, 'table', nodeColumns(NOW), { width });
    expect(widestLine(out)).toBeLessThanOrEqual(width);
    expect(out).toBe('NAME                    READY   AGE   KUBELET\nfleet-target-0-node-0   True    30s   v1.36.3\n');
    expect(renderRows(nodes, 'wide', nodeColumns(NOW), { width })).toContain('2026-12-05T09:59:30.000Z');
  });
});
