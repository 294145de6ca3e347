import { describe, expect, it } from 'vitest';
import { isProcessAlive, isSameProcess, processStartTime } from './process-alive.js';

// pid 2^22+1 is above Linux's pid_max default: certainly not running.
const DEAD = 4_194_305;

describe('isSameProcess', () => {
  it('knows a live process by its pid and recorded start time', () => {
    const { start } = processStartTime(process.pid);
    expect(start).toMatch(/^\d+$/);
    expect(isSameProcess(process.pid, start)).toBe(true);
  });

  it('refuses a live pid whose start time differs from the recorded one: a newer process reused it', () => {
    const { start } = processStartTime(process.pid);
    expect(isProcessAlive(process.pid)).toBe(true);
    expect(isSameProcess(process.pid, `${BigInt(start!) + 1n}`)).toBe(false);
  });

  it('trusts the pid alone when no start time was recorded, and never a dead pid', () => {
    expect(isSameProcess(process.pid, undefined)).toBe(true);
    expect(isSameProcess(DEAD, undefined)).toBe(false);
    expect(isSameProcess(DEAD, '1')).toBe(false);
  });
});
