import { describe, expect, it } from 'vitest';
import type { Column } from './table.js';
import { widestLine as longest, renderTable } from './table.js';

interface Run {
  readonly cluster: string;
  readonly outcome: string;
  readonly actor: string;
  readonly runId: string;
  readonly finishedAt: string;
}

const rows: Run[] = [
  {
    cluster: 'prod-eu-1',
    outcome: 'handed-off',
    actor: 'system:serviceaccount:platform-automation:fleet-bootstrapper-with-a-long-name',
    runId: 'run-20261205-0912-7f3a9c1e5b2d4f60a8e1c3b5d7f9a1c3',
    finishedAt: '2026-12-05T09:12:00Z',
  },
  {
    cluster: 'edge-7',
    outcome: 'failed',
    actor: 'kubernetes-admin',
    runId: 'run-2',
    finishedAt: '2026-12-05T08:00:00Z',
  },
];

const columns: Column<Run>[] = [
  { header: 'CLUSTER', value: (r) => r.cluster },
  { header: 'OUTCOME', value: (r) => r.outcome },
  { header: 'ACTOR', value: (r) => r.actor, shrink: 'middle' },
  { header: 'RUN ID', value: (r) => r.runId, shrink: 'middle', optional: true },
  { header: 'FINISHED AT', value: (r) => r.finishedAt, wide: true },
];

describe('renderTable', () => {
  it.each([80, 100, 130])('fits %i columns, with no box drawing and headers as words', (width) => {
    const out = renderTable(rows, columns, { width });
    expect(longest(out)).toBeLessThanOrEqual(width);
    expect(out).not.toMatch(/[│┌─┼]/);
    expect(out.split('\n')[0]).toMatch(/^CLUSTER\s{3,}OUTCOME\s{3,}ACTOR/);
    expect(out).not.toContain('FINISHED AT');
  });

  it('aligns every column: each starts at the same offset on every line', () => {
    const lines = renderTable(rows, columns, { width: 200 }).trimEnd().split('\n');
    const at = lines[0]?.indexOf('OUTCOME');
    expect(lines[1]?.indexOf('handed-off')).toBe(at);
    expect(lines[2]?.indexOf('failed')).toBe(at);
  });

  it('shortens in the middle before it drops an optional column, and drops one before cutting further', () => {
    const eighty = renderTable(rows, columns, { width: 80 });
    expect(eighty).toContain('RUN ID');
    expect(eighty).toMatch(/system:servi.*….*long-name/);
    const sixty = renderTable(rows, columns, { width: 60 });
    expect(sixty).not.toContain('RUN ID');
    expect(sixty).toContain('kubernetes-admin');
    const roomy = renderTable(rows, columns, { width: 200 });
    expect(roomy).toContain('RUN ID');
    expect(roomy).toContain(rows[0]?.actor);
  });

  it('-o wide: every column, every value whole, whatever the width', () => {
    const out = renderTable(rows, columns, { width: 80, wide: true });
    for (const r of rows) for (const v of Object.values(r)) expect(out).toContain(v);
    expect(out.split('\n')[0]).toContain('FINISHED AT');
  });

  it('keeps a table of one narrow screen readable: the last column takes what is left', () => {
    const out = renderTable(rows, columns, { width: 40 });
    expect(longest(out)).toBeLessThanOrEqual(40);
    expect(out.split('\n')[0]).toMatch(/^CLUSTER/);
  });

  it('puts a multi-line value on one line', () => {
    const out = renderTable([{ a: 'x\ny' }], [{ header: 'A', value: (r) => r.a }], { width: 80 });
    expect(out).toBe('A\nx y\n');
  });
});
