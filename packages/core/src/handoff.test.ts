import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createFakeClock } from './fake-clock.js';
import { fakeHandoffDeps } from './handoff/fake-deps.js';
import type { Pushed } from './handoff/phases.js';
import { HandoffRun } from './handoff/run.js';
import type { HandoffDeps, HandoffSummary } from './handoff/types.js';
import { blamedStepOf, errorOf, outcomeOf } from './handoff/verdict.js';
import { driveHandoff, type HandoffSteps } from './handoff.js';
import { loadHandoffPlan } from './handoff-plan.js';

// The driver's guarantees, on a fake clock with steps that only say what they did: whatever ends the pushing part,
// revoke runs before prove and prove before record; the lock is released and the run journaled finished once.

const fixture = fileURLToPath(new URL('../../../test/fixtures/handoff/plan.yaml', import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

type StepName = Exclude<keyof HandoffSteps, 'summarize'>;

function setup(opts: { throwAt?: StepName; early?: boolean; signal?: AbortSignal; readOnlyJournalAt?: StepName } = {}) {
  const journalDir = mkdtempSync(join(tmpdir(), 'baton-driver-'));
  dirs.push(journalDir);
  const { plan } = loadHandoffPlan(fixture);
  const calls: string[] = [];
  const done: string[] = [];
  const deps: HandoffDeps = fakeHandoffDeps(
    {},
    {
      onStepDone: (step, _ms, fact) => done.push(fact ? `${step}: ${fact}` : step),
      ...(opts.signal ? { signal: opts.signal } : {}),
    },
    createFakeClock(),
  );
  const run = new HandoffRun({ ...plan, journalDir }, deps);
  // The driver hands each step what the one before returned, and reads none of it itself.
  const phase = {} as Pushed;
  const step = (name: StepName, enter?: 'enter' | 'enterSafely') => async (r: HandoffRun) => {
    if (opts.readOnlyJournalAt === name) {
      // Root writes through file modes: a directory where the journal file was makes every append fail (EISDIR).
      rmSync(join(journalDir, 'test.jsonl'));
      mkdirSync(join(journalDir, 'test.jsonl'));
    }
    if (enter === 'enter') await r.enter(name === 'scopeCheck' ? 'scope-check' : (name as 'push'));
    if (enter === 'enterSafely') await r.enterSafely(name as 'revoke');
    calls.push(name);
    if (name === 'push') r.fact('3 objects pushed');
    if (opts.throwAt === name) throw new Error(`${name} broke`);
    if (name === 'mint') r.identity = {} as HandoffRun['identity'];
    return phase;
  };
  const steps: HandoffSteps = {
    begin: async (r) => {
      calls.push('begin');
      if (opts.throwAt === 'begin') throw new Error('refused');
      r.journal.write(r.runId, 'start', r.clock.now());
      return {
        held: { lock: {} as never, release: async () => void calls.push('release') },
        set: phase.set,
        rules: phase.rules,
      };
    },
    cleanup: async () => {
      calls.push('cleanup');
      if (opts.throwAt === 'cleanup') throw new Error('cleanup broke');
      return opts.early ? { ended: { outcome: 'already-handed-off' } as HandoffSummary } : { scoped: phase };
    },
    confine: step('confine', 'enter'),
    mint: step('mint', 'enter'),
    scopeCheck: async (r) => void (await step('scopeCheck', 'enter')(r)),
    push: step('push', 'enter'),
    takeover: async (r) => {
      await step('takeover', 'enter')(r);
      if (opts.signal)
        await new Promise((_, reject) => r.signal.addEventListener('abort', () => reject(r.signal.reason)));
    },
    revoke: async (r) => {
      await step('revoke', 'enterSafely')(r);
      return {};
    },
    prove: async (r) => {
      await step('prove', 'enterSafely')(r);
      return {};
    },
    repair: async (r) => {
      if (r.tampering) await step('repair', 'enterSafely')(r);
      return undefined;
    },
    record: async (r) => {
      await step('record', 'enterSafely')(r);
      return {};
    },
    summarize: (r, e) =>
      ({ outcome: outcomeOf(r, e), failedStep: blamedStepOf(r, e), error: errorOf(r, e) }) as HandoffSummary,
  };
  const finished = () =>
    readFileSync(join(journalDir, 'test.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"finished"')).length;
  return { run, steps, calls, finished, done };
}

const ENDING = ['revoke', 'prove', 'record', 'release'];

describe('the handoff driver', () => {
  it('runs every step in order and ends with revoke, prove, record, then releases the lock once', async () => {
    const t = setup();
    const s = await driveHandoff(t.run, t.steps);
    expect(t.calls).toEqual(['begin', 'cleanup', 'confine', 'mint', 'scopeCheck', 'push', 'takeover', ...ENDING]);
    expect(s.outcome).toBe('handed-off');
    expect(t.finished()).toBe(1);
    // Each step is reported once, as it ends, with its fact.
    expect(t.done).toEqual([
      'validate',
      'confine',
      'mint',
      'scope-check',
      'push: 3 objects pushed',
      'takeover',
      'revoke',
      'prove',
      'record',
    ]);
  });

  for (const at of ['cleanup', 'confine', 'mint', 'scopeCheck', 'push', 'takeover'] as const) {
    it(`still revokes, proves and records when ${at} fails, blaming ${at}`, async () => {
      const t = setup({ throwAt: at });
      const s = await driveHandoff(t.run, t.steps);
      expect(t.calls.slice(-4)).toEqual(ENDING);
      if (at !== 'takeover') expect(t.calls).not.toContain(nextOf(at));
      expect(s.outcome).toBe('failed');
      expect(s.error).toBe(`${at} broke`);
      expect(t.finished()).toBe(1);
    });
  }

  it('still proves and records when revoke itself throws, and says the revocation failed', async () => {
    const t = setup({ throwAt: 'revoke' });
    const s = await driveHandoff(t.run, t.steps);
    expect(t.calls.slice(-4)).toEqual(ENDING);
    expect(s.outcome).toBe('failed');
    expect(s.error).toContain('revoke failed: revoke broke');
  });

  it('revokes when the journal cannot be written any more (a full or read-only disk)', async () => {
    const t = setup({ readOnlyJournalAt: 'push' });
    const s = await driveHandoff(t.run, t.steps);
    expect(t.calls).toEqual(['begin', 'cleanup', 'confine', 'mint', 'scopeCheck', ...ENDING]);
    expect(s.outcome).toBe('failed');
    expect(s.failedStep).toBe('push');
    expect(s.error).toMatch(/EISDIR/);
  });

  it('an operator signal during the takeover aborts the run, which still revokes, proves and records', async () => {
    const ac = new AbortController();
    const t = setup({ signal: ac.signal });
    const done = driveHandoff(t.run, t.steps);
    await new Promise((r) => setImmediate(r));
    ac.abort(new Error('received SIGINT'));
    const s = await done;
    expect(t.calls.slice(-4)).toEqual(ENDING);
    expect(s.outcome).toBe('aborted');
  });

  it('ends before anything is minted when cleanup returns a summary, releasing the lock once', async () => {
    const t = setup({ early: true });
    const s = await driveHandoff(t.run, t.steps);
    expect(t.calls).toEqual(['begin', 'cleanup', 'release']);
    expect(s.outcome).toBe('already-handed-off');
    expect(t.finished()).toBe(1);
  });

  it('a refusal in begin runs nothing else', async () => {
    const t = setup({ throwAt: 'begin' });
    await expect(driveHandoff(t.run, t.steps)).rejects.toThrow('refused');
    expect(t.calls).toEqual(['begin']);
  });
});

function nextOf(step: StepName): StepName {
  const order: StepName[] = ['cleanup', 'confine', 'mint', 'scopeCheck', 'push', 'takeover'];
  return order[order.indexOf(step) + 1]!;
}
