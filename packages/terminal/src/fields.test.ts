import { describe, expect, it } from 'vitest';
import { renderFields } from './fields.js';

const fields = [
  ['outcome', 'handed-off'],
  ['credential fingerprint', `sha256:${'ab12'.repeat(16)}`],
  [
    'confinement',
    'baton-confine-run-1: 11 planned objects (plan sha256:0f5e17c1); probe outside the plan denied; closed at 2026-12-05T09:12:00Z',
  ],
  ['error', undefined],
  ['total seconds', 21.4],
] as const;

describe('renderFields', () => {
  it.each([80, 130])('prints aligned key: value lines no wider than %i columns', (width) => {
    const out = renderFields(fields, { width });
    const lines = out.trimEnd().split('\n');
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(width);
    expect(lines[0]).toMatch(/^outcome:\s+handed-off$/);
    const column = lines[0]?.indexOf('handed-off');
    expect(lines.find((l) => l.startsWith('total seconds:'))?.indexOf('21.4')).toBe(column);
    expect(out).not.toContain('error:');
  });

  it('wraps prose under its value column and shortens a digest in the middle at 80 columns', () => {
    const out = renderFields(fields, { width: 80 });
    const column = out.indexOf('handed-off');
    expect(out).toMatch(new RegExp(`\\n {${column}}\\S`));
    expect(out).toMatch(/sha256:ab12.*….*ab12\n/);
  });

  it('-o wide: every value whole on its line', () => {
    const out = renderFields(fields, { width: 80, wide: true });
    expect(out).toContain(`sha256:${'ab12'.repeat(16)}`);
    expect(out).toContain(fields[2][1]);
  });
});
