import { loadHandoffPlan } from '@baton/core';
import type { KubeClients } from '@baton/kube';
import { OUTPUT_FORMATS } from '@baton/terminal';
import { Command, Option } from '@commander-js/extra-typings';
import { operatorClients } from './operator-clients.js';

/** A command with the options every cluster-side noun shares: --plan, --kubeconfig, --context, --namespace, -o. */
export function clusterCommand(name: string, description: string) {
  return new Command(name)
    .description(description)
    .option('--plan <file>', 'handoff plan (for the kubeconfig and baton namespace)')
    .option('--kubeconfig <file>', 'operator kubeconfig')
    .option('--context <name>', 'kubeconfig context')
    .option('--namespace <name>', 'baton namespace (default: the plan, or baton-system)')
    .addOption(new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS).default('table' as const));
}

/** The operator's clients and the baton namespace from the shared options. */
export function clusterTarget(o: { plan?: string; kubeconfig?: string; context?: string; namespace?: string }): {
  operator: KubeClients;
  namespace: string;
} {
  const loaded = o.plan ? loadHandoffPlan(o.plan) : undefined;
  return {
    operator: operatorClients(loaded, o.kubeconfig, o.context),
    namespace: o.namespace ?? loaded?.plan.batonNamespace ?? 'baton-system',
  };
}
