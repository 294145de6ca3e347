// `baton up`'s engine in a process of its own that stops dead at one step, so a test can kill -9 it exactly there.
// Usage: node --conditions=@baton/source --import tsx held-handoff.ts <plan.yaml> <kubeconfig> <step>
// Prints `held at <step> <runId>` on stdout once the step's journal entry is on disk, then waits forever.
import { hostname } from 'node:os';
import { createLogger, loadHandoffPlan, openAuditSink, runHandoff, systemClock } from '@baton/core';
import { clientsFromKubeconfigFile } from '@baton/kube';

const [planPath = '', kubeconfigPath = '', holdAt = ''] = process.argv.slice(2);
const loaded = loadHandoffPlan(planPath);
const runId = `held-${process.pid}`;
await runHandoff(loaded, {
  operator: clientsFromKubeconfigFile(kubeconfigPath),
  clock: systemClock,
  log: createLogger(),
  audit: openAuditSink(loaded.plan.audit),
  actor: { user: 'test', host: hostname(), pid: process.pid, via: 'cli' },
  newRunId: () => runId,
  isPidAlive: () => true,
  resolveRevision: async () => {
    throw new Error('tests pin pull.source.revision');
  },
  onStep: async (step) => {
    if (step !== holdAt) return;
    process.stdout.write(`held at ${step} ${runId}\n`);
    // A pending promise alone does not keep Node alive; the interval does, until the test's SIGKILL.
    setInterval(() => {}, 60_000);
    await new Promise(() => {});
  },
});
