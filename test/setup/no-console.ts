import { afterEach, beforeEach, vi } from 'vitest';

// A stray console.* in library code is a bug (and a possible secret leak): fail the test that triggers it.
const methods = ['log', 'info', 'warn', 'error', 'debug'] as const;

beforeEach(() => {
  for (const m of methods) {
    vi.spyOn(console, m).mockImplementation((...args: unknown[]) => {
      throw new Error(`unexpected console.${m}(${args.map(String).join(' ').slice(0, 200)})`);
    });
  }
});

afterEach(() => {
  vi.restoreAllMocks();
});
