import { readFileSync } from 'node:fs';
import { readEntries } from '@baton/audit';
import { clientsFromKubeconfigFile, findBootstrapLeftovers } from '@baton/kube';
import type { ControllerSide, HandoffBed } from '@baton/testenv/beds';
import { expect } from 'vitest';
import { COMPILED_LOCAL_STACK, pulumiUp } from '../../scripts/demo/pulumi-up.js';
import { JWT_PATTERN } from './handoff-run.js';
import { adminClients, confinementsLeft } from './kube.js';

/**
 * `pulumi up` of stacks/local for `bed` (its config `profile` from the bed's plan, so the component's controller block
 * is the profile's, as `controllers.of(profile)` gives), through the real engine, and what a user relies on after it:
 * the receipt in the stack, the credential revoked and proven, nothing left, one audit event via pulumi naming the
 * profile, and no secret in what `pulumi up` printed or in the stored state.
 */
export async function expectPulumiHandoff(bed: HandoffBed<ControllerSide>, profile: string): Promise<void> {
  const up = await pulumiUp(bed, bed.side.dir, AbortSignal.timeout(400_000), COMPILED_LOCAL_STACK);
  const printed = readFileSync(up.logPath, 'utf8');
  expect(up.receipt?.outcome, up.error).toBe('handed-off');
  expect(up.receipt?.revision).toBe(bed.side.revision);
  expect(up.receipt?.credential?.revokedAt).toBeTruthy();
  expect(up.receipt?.proof).toMatchObject({ probeStatus: 401, tokenReviewAuthenticated: false });
  expect(up.receipt?.receiptName).toBe('baton-system/baton-receipt');
  expect(await findBootstrapLeftovers(clientsFromKubeconfigFile(bed.kubeconfigPath), 'baton-system')).toEqual([]);
  expect(await confinementsLeft(adminClients(bed.kubeconfigPath))).toEqual([]);
  const events = [];
  for await (const e of readEntries(bed.side.auditLogPath)) events.push(e.statement.predicate);
  expect(events.map((e) => [e.runId, e.outcome, e.actor.via, e.plan.push.profile])).toEqual([
    [up.receipt?.runId, 'handed-off', 'pulumi', profile],
  ]);
  // The stack's config `images` carries the bed's trust policy: every image was verified before the mint.
  expect(events[0]?.plan.push.images?.verification).toBe('verified');
  for (const secret of [bed.side.git.credentials.password, ...bed.side.secretValues])
    expect(printed + readFileSync(up.statePath, 'utf8')).not.toContain(secret);
  expect(printed).not.toMatch(JWT_PATTERN);
}
