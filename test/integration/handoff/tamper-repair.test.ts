import { writeSigningKeyPair } from '@baton/audit';
import { BATON_CONTROLLER_PROFILE } from '@baton/testbed';
import { type HandoffBed, startHandoffBed } from '@baton/testenv/beds';
import { afterEach, describe, it } from 'vitest';
import { expectRewriteDuringRepairStopped, type TamperTarget } from '../../support/tamper-repair.js';

// Issue 29, tried as a thief against the real apiserver with a token requested for the run's bootstrap identity,
// while the confinement is still plan-shaped (the run frozen with SIGSTOP as its write window is about to close): the
// pull credential's value rewritten. The post-close check finds it; the cluster must not keep the thief's value, and
// the controller must not keep running on it. The repair itself, on every profile, is in the table of
// test/integration/gitops (test/support/gitops-suite.ts); this file keeps the thief who strikes again during it.
const TARGET: TamperTarget = {
  secrets: [{ namespace: 'baton-system', name: 'baton-pull-credential' }],
  workloads: [{ kind: 'Deployment', namespace: 'baton-system', name: 'baton-controller' }],
};

let bed: HandoffBed | undefined;
afterEach(async () => {
  await bed?.stop();
  bed = undefined;
});

const start = () =>
  startHandoffBed({ profileDir: BATON_CONTROLLER_PROFILE, writeAuditKeys: (paths) => writeSigningKeyPair(paths) });

describe('baton-controller: a Secret rewritten during the push window does not stay in effect', () => {
  it('a thief who rewrites again during the repair: the workloads and the Secret are deleted, and the run says so', async () => {
    bed = await start();
    await expectRewriteDuringRepairStopped(bed, TARGET);
  }, 600_000);
});
