import { execFileSync } from 'node:child_process';
import { createBedNetwork, removeBedNetwork } from '@baton/testenv';
import { describe, expect, it } from 'vitest';
import { eventually } from '../../support/kube.js';

const linkExists = (name: string) => {
  try {
    execFileSync('ip', ['link', 'show', name], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

describe('bed networks', () => {
  it("a teardown's late link delete cannot cut off the bed that took the freed /30", async () => {
    const a = await createBedNetwork('race-a');
    let b: Awaited<ReturnType<typeof createBedNetwork>> | undefined;
    try {
      // Teardown's first step: the namespace goes, and the kernel takes the veth pair (and the /30) with it.
      execFileSync('ip', ['netns', 'del', a.name]);
      await eventually(async () => !linkExists(a.hostLink), 10_000, `the kernel to remove ${a.hostLink}`);
      b = await createBedNetwork('race-b');
      // Its second step, late: deleting a's host link by name must not touch b's, whichever /30 b took.
      await removeBedNetwork(a.name, a.hostLink);
      expect(linkExists(b.hostLink)).toBe(true);
      expect(b.hostLink).not.toBe(a.hostLink);
      const addr = execFileSync('ip', ['-o', '-4', 'addr', 'show', 'dev', b.hostLink], { encoding: 'utf8' });
      expect(addr).toContain(`inet ${b.hostIp}/30`);
      // b usually takes a's /30 (the lowest free one): the case in which a link named after the slot was deleted.
      process.stdout.write(
        `[bed-network] a at ${a.hostIp}, b at ${b.hostIp}${b.hostIp === a.hostIp ? ' (the same /30)' : ''}\n`,
      );
    } finally {
      await removeBedNetwork(a.name, a.hostLink);
      if (b) await removeBedNetwork(b.name, b.hostLink);
    }
    expect(linkExists(b!.hostLink)).toBe(false);
  });
});
