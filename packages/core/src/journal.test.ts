import { appendFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { useTempDirs } from '../../../test/support/temp-dirs.js';
import { Journal } from './journal.js';

const tempDir = useTempDirs();

describe('Journal', () => {
  it('lists runs that never finished, skipping a torn last line', () => {
    const dir = tempDir('journal-');
    const j = new Journal(dir, 'c1');
    const t = new Date('2026-01-01T00:00:00Z');
    j.write('a', 'start', t);
    j.write('a', 'finished', t);
    j.write('b', 'start', t);
    j.write('b', 'mint', t, { name: 'baton-bootstrap-b' });
    appendFileSync(j.path, '{"runId":"b","st');
    const runs = j.unfinished();
    expect(runs.map((r) => [r.runId, r.lastStep])).toEqual([['b', 'mint']]);
    expect(runs[0]?.entries[1]?.data).toEqual({ name: 'baton-bootstrap-b' });
  });
});
