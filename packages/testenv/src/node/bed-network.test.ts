import { describe, expect, it } from 'vitest';
import { hostLinkOf } from './bed-network.js';

describe('hostLinkOf', () => {
  it('names the host end after the bed, within the 15 characters of an interface name', () => {
    const names = ['a', 'baton-f28200', 'baton-f28201', 'x'.repeat(40)].map(hostLinkOf);
    for (const n of names) expect(n).toMatch(/^btn[0-9a-f]{10}$/);
    expect(new Set(names).size).toBe(names.length);
    expect(hostLinkOf('baton-f28200')).toBe(hostLinkOf('baton-f28200'));
  });
});
