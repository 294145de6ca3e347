// `baton up`'s engine in a process of its own that stops dead at one step, so a test can kill -9 it exactly there.
// Usage: node --conditions=@baton/source --import tsx held-handoff.ts <plan.yaml> <kubeconfig> <step>
// Prints `held at <step> <runId>` on stdout once the step's journal entry is on disk, then waits forever.
// <step> is a handoff step, or `recorded`: after the audit event and its journal entry, as the receipt is written.
import { hostname } from 'node:os';
import { createHandoffDeps, loadHandoffPlan, RECEIPT_NAME, runHandoff } from '@baton/core';
import { clientsFromKubeconfigFile } from '@baton/kube';

const [planPath = '', kubeconfigPath = '', holdAt = ''] = process.argv.slice(2);
const loaded = loadHandoffPlan(planPath);
const runId = `held-${process.pid}`;
const hold = async (step: string) => {
  process.stdout.write(`held at ${step} ${runId}\n`);
  // A pending promise alone does not keep Node alive; the interval does, until the test's SIGKILL.
  setInterval(() => {}, 60_000);
  await new Promise(() => {});
};
const clients = clientsFromKubeconfigFile(kubeconfigPath);
// The receipt is written by server-side apply (the REST client's apply): stop there to hold a run that has
// recorded but has no receipt yet.
const rest = new Proxy(clients.rest, {
  get(target, prop) {
    const value = Reflect.get(target, prop, target) as unknown;
    if (typeof value !== 'function') return value;
    return async (...args: unknown[]) => {
      const o = args[0] as { kind?: string; metadata?: { name?: string } } | undefined;
      if (prop === 'apply' && o?.kind === 'ConfigMap' && o.metadata?.name === RECEIPT_NAME && holdAt === 'recorded')
        await hold(holdAt);
      return (value as (...a: unknown[]) => unknown).apply(target, args);
    };
  },
});
await runHandoff(
  loaded,
  createHandoffDeps(
    loaded,
    { ...clients, rest },
    {
      overrides: {
        actor: { user: 'test', host: hostname(), pid: process.pid, via: 'cli' },
        newRunId: () => runId,
        resolveRevision: async () => {
          throw new Error('tests pin pull.source.revision');
        },
        onStep: async (step) => {
          if (step === holdAt) await hold(step);
        },
      },
    },
  ),
);
