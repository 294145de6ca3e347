import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createFakeClock } from '../fake-clock.js';
import { loadHandoffPlan } from '../handoff-plan.js';
import { fakeHandoffDeps } from './fake-deps.js';
import { HandoffRun } from './run.js';
import { HandoffStep } from './types.js';

const fixture = fileURLToPath(new URL('../../../../test/fixtures/handoff/plan.yaml', import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function budgetError(step: HandoffStep, takeover?: { isComplete: boolean; reason: string }): Promise<string> {
  const journalDir = mkdtempSync(join(tmpdir(), 'baton-run-'));
  dirs.push(journalDir);
  const { plan } = loadHandoffPlan(fixture);
  const run = new HandoffRun({ ...plan, journalDir }, fakeHandoffDeps({}, {}, createFakeClock()));
  run.issuedMs = 0;
  run.current = step;
  if (takeover)
    run.takeover = { ...takeover, revisionSeen: undefined, ownedObjects: [], notTakenOver: [], pushOnly: [] };
  run.startBudget();
  return new Promise((resolve) =>
    run.budget.signal.addEventListener('abort', () => resolve((run.budget.signal.reason as Error).message)),
  );
}

describe('the push budget', () => {
  it('says what the takeover still waited for when the budget ran out during it', async () => {
    const message = await budgetError(HandoffStep.takeover, {
      isComplete: false,
      reason: 'Kustomization/flux-system/flux-system not Ready',
    });
    expect(message).toMatch(/^push window budget of \d+ s exceeded \(push\.budgetSeconds\)/);
    expect(message).toContain('; the controller had not taken over: Kustomization/flux-system/flux-system not Ready');
  });

  it('says only the budget when it ran out in another step', async () => {
    const message = await budgetError(HandoffStep.push);
    expect(message).toMatch(/exceeded \(push\.budgetSeconds\); the bootstrap credential was revoked$/);
  });
});
