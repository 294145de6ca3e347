import { describe, expect, it } from 'vitest';
import { bedLinkOf, hostLinkOf } from './bed-network.js';

describe('hostLinkOf', () => {
  it('names the host end after the bed, within the 15 characters of an interface name', () => {
    const names = ['a', 'baton-f28200', 'baton-f28201', 'x'.repeat(40)].map(hostLinkOf);
    for (const n of names) expect(n).toMatch(/^btn[0-9a-f]{10}$/);
    expect(new Set(names).size).toBe(names.length);
    expect(hostLinkOf('baton-f28200')).toBe(hostLinkOf('baton-f28200'));
  });
});

describe('bedLinkOf', () => {
  it('takes its /30 from the target node address and names each end after the other bed', () => {
    const mgmt = { netns: 'baton-mgmt', nodeIp: '10.250.0.6' };
    const a = bedLinkOf(mgmt, { netns: 'baton-t0', nodeIp: '10.250.0.10' });
    const b = bedLinkOf(mgmt, { netns: 'baton-t1', nodeIp: '10.250.1.14' });
    expect(a).toMatchObject({ fromIp: '10.251.0.9', toIp: '10.251.0.10' });
    expect(b).toMatchObject({ fromIp: '10.251.1.13', toIp: '10.251.1.14' });
    expect(a.fromLink).not.toBe(b.fromLink);
    expect(a.toLink).toBe(b.toLink);
    for (const n of [a.fromLink, a.toLink]) expect(n).toMatch(/^bl[0-9a-f]{11}$/);
  });
});
