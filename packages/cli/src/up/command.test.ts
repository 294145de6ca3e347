import { newRunId } from '@baton/core';
import { ConfigError } from '@baton/errors';
import { describe, expect, it } from 'vitest';
import { parseDurationMs } from '../shared/duration.js';

describe('baton up flags', () => {
  it('parses --timeout durations', () => {
    expect(parseDurationMs('10m')).toBe(600_000);
    expect(parseDurationMs('90s')).toBe(90_000);
    expect(parseDurationMs('45')).toBe(45_000);
    expect(parseDurationMs('1h')).toBe(3_600_000);
    expect(() => parseDurationMs('soon')).toThrow(ConfigError);
    expect(() => parseDurationMs('soon')).toThrow('--timeout soon is invalid: use a duration like 90s, 10m or 1h');
  });

  it('makes DNS-safe, time-sortable run ids', () => {
    const id = newRunId(new Date('2026-11-30T12:34:56.789Z'));
    expect(id).toMatch(/^20261130123456-[0-9a-f]{6}$/);
  });
});
