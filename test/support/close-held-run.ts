// `baton up`'s engine in a process of its own that freezes itself (SIGSTOP) as a write window is about to close: the
// push is done, the confinement is still plan-shaped and the identity still bound, so a test acting as a thief with a
// token for the identity can write what the plan allows, then resume the run (SIGCONT). The window's close is the
// operator's read of the run's ValidatingAdmissionPolicy (closeConfinement); the first is the handoff's own, the
// second a repair's.
// Usage: node --conditions=@baton/source --import tsx close-held-run.ts <plan.yaml> <kubeconfig> <closes to hold: 1,2>
// Prints `held at close <n> <policy>` on stdout before it stops, and `summary <json>` at the end; exits as `baton up`
// does (0 handed off, 1 otherwise).
import { hostname } from 'node:os';
import { createHandoffDeps, loadHandoffPlan, runHandoff } from '@baton/core';
import { clientsFromKubeconfigFile } from '@baton/kube';

const [planPath = '', kubeconfigPath = '', holds = '1'] = process.argv.slice(2);
const holdAt = new Set(holds.split(',').map(Number));
const loaded = loadHandoffPlan(planPath);
const clients = clientsFromKubeconfigFile(kubeconfigPath);
let closes = 0;
const objects = new Proxy(clients.objects, {
  get(target, prop) {
    const value = Reflect.get(target, prop, target) as unknown;
    if (typeof value !== 'function') return value;
    return (...args: unknown[]) => {
      const o = args[0] as { kind?: string; metadata?: { name?: string } } | undefined;
      if (prop === 'read' && o?.kind === 'ValidatingAdmissionPolicy') {
        closes++;
        if (holdAt.has(closes)) {
          // Synchronous on a pipe, then stopped before the next request (the unbinding) is even sent.
          process.stdout.write(`held at close ${closes} ${o.metadata?.name ?? ''}\n`);
          process.kill(process.pid, 'SIGSTOP');
        }
      }
      return (value as (...a: unknown[]) => unknown).apply(target, args);
    };
  },
});
const summary = await runHandoff(
  loaded,
  createHandoffDeps(
    loaded,
    { ...clients, objects },
    {
      overrides: {
        actor: { user: 'test', host: hostname(), pid: process.pid, via: 'cli' },
        newRunId: () => `held-${process.pid}`,
        resolveRevision: async () => {
          throw new Error('tests pin pull.source.revision');
        },
      },
    },
  ),
);
process.stdout.write(`summary ${JSON.stringify(summary)}\n`);
process.exitCode = summary.outcome === 'handed-off' ? 0 : 1;
