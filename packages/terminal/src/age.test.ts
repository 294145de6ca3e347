import { describe, expect, it } from 'vitest';
import { ageOf, humanDuration, isTimestamp } from './age.js';

const s = 1000;
const m = 60 * s;
const h = 60 * m;
const d = 24 * h;

describe('humanDuration, as kubectl prints AGE', () => {
  it.each([
    [45 * s, '45s'],
    [119 * s, '119s'],
    [5 * m + 30 * s, '5m30s'],
    [5 * m, '5m'],
    [42 * m, '42m'],
    [3 * h + 12 * m, '3h12m'],
    [20 * h, '20h'],
    [3 * d + 4 * h, '3d4h'],
    [45 * d, '45d'],
    [2 * 365 * d + 30 * d, '2y30d'],
    [9 * 365 * d, '9y'],
    [-5 * s, '0s'],
  ])('%i ms is %s', (ms, text) => expect(humanDuration(ms)).toBe(text));

  it('ages a timestamp at a given now, and names one it cannot read', () => {
    expect(ageOf('2026-12-05T09:00:00Z', Date.parse('2026-12-05T09:05:00Z'))).toBe('5m');
    expect(ageOf('yesterday', 0)).toBe('<unknown>');
    expect(isTimestamp('2026-12-05T09:00:00.123Z')).toBe(true);
    expect(isTimestamp('run-1')).toBe(false);
  });
});
