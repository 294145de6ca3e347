import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePorts } from './ports.js';

describe('freePorts', () => {
  it('returns distinct bindable ports below the ephemeral range', async () => {
    const ports = await freePorts(6);
    expect(new Set(ports).size).toBe(6);
    for (const p of ports) {
      expect(p).toBeGreaterThanOrEqual(10_000);
      expect(p).toBeLessThan(32_768);
    }
    const s = createServer();
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(ports[0], '127.0.0.1', () => resolve());
    });
    s.close();
  });

  it('skips a port that is taken', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(20_000, '127.0.0.1', () => r()));
    // The first pick is the taken port; the second is free.
    const picks = [(20_000 - 10_000 + 0.5) / 22_767, 0.5];
    let calls = 0;
    const ports = await freePorts(1, () => {
      calls++;
      return picks.shift() ?? Math.random();
    });
    taken.close();
    expect(calls).toBe(2);
    expect(ports[0]).not.toBe(20_000);
  });
});
