import {
  type ClusterPlanCheck,
  checkPlanOnCluster,
  type HandoffPreview,
  loadHandoffPlan,
  previewHandoff,
} from '@baton/core';
import { OUTPUT_FORMATS } from '@baton/terminal';
import { Command, Option } from '@commander-js/extra-typings';
import { stringify } from 'yaml';
import { operatorClients } from '../up/handoff-deps.js';

/** What `baton plan` prints: the push plan, and what the cluster says of it when one is named. */
export interface PlanReport {
  readonly plan: string;
  readonly profile: string;
  readonly preview: HandoffPreview;
  readonly cluster?: ClusterPlanCheck;
}

/**
 * `baton plan`: what `baton up` would push, with which credential and confinement; with a cluster (--kubeconfig,
 * --context, or a kubeconfig in the plan) also the operator's server-side dry run of every object and what preflight
 * would refuse. Writes nothing to the cluster and mints nothing. Exit 1 when the cluster would refuse the handoff.
 */
export function planCommand() {
  return new Command('plan')
    .description(
      'show what baton up would push (objects, plan digest, credential rules, confinement) and, with a cluster, the server-side dry run and preflight, writing nothing',
    )
    .requiredOption('--plan <file>', 'handoff plan')
    .option('--kubeconfig <file>', 'operator kubeconfig: also ask the cluster (dry run and preflight, nothing written)')
    .option('--context <name>', 'kubeconfig context (implies asking the cluster)')
    .addOption(new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS).default('table' as const))
    .action(async (o) => {
      const loaded = loadHandoffPlan(o.plan);
      const preview = previewHandoff(loaded);
      const c = loaded.plan.cluster;
      const named = o.kubeconfig ?? o.context ?? c.kubeconfig ?? c.kubeconfigContent;
      const cluster = named
        ? await checkPlanOnCluster(operatorClients(loaded, o.kubeconfig, o.context), loaded)
        : undefined;
      const report: PlanReport = {
        plan: loaded.file,
        profile: loaded.plan.push.profile,
        preview,
        ...(cluster ? { cluster } : {}),
      };
      if (o.output === 'json') process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      else if (o.output === 'yaml') process.stdout.write(stringify(report, { version: '1.1' }));
      else process.stdout.write(formatPlanReport(report));
      if (cluster && wouldRefuse(cluster)) process.exitCode = 1;
    });
}

/** Whether `baton up` would stop at preflight or at the confinement's dry run. */
export function wouldRefuse(c: ClusterPlanCheck): boolean {
  return c.refusals.length > 0 || c.dryRun.some((d) => d.result === 'refused');
}

/** The report as text for a terminal. */
export function formatPlanReport(r: PlanReport): string {
  const p = r.preview;
  const lines = [
    `plan ${r.plan} (profile ${r.profile})`,
    `plan digest ${p.planDigest}`,
    `objects (${p.objects.length}, in apply order):`,
    ...p.objects.map((x) => `  ${x}${p.pushOnly.includes(x) ? '  (push-only)' : ''}`),
    `push credential: ServiceAccount ${p.confinement.subject}, its rules:`,
    ...p.rules.map(
      (x) =>
        `  ${x.verbs.join(',')} ${[x.apiGroups.join(',') || 'core', x.resources.join(',')].join('/')}${x.resourceNames?.length ? ` [${x.resourceNames.join(', ')}]` : ''}${x.namespace ? ` in namespace ${x.namespace}` : ' (cluster-wide)'}`,
    ),
    `confinement: ValidatingAdmissionPolicy ${p.confinement.policyName}, ${p.confinement.validationCount} validations, ${p.confinement.policyBytes} bytes; field manager ${p.confinement.fieldManager}`,
    `  ${p.confinement.content}`,
  ];
  if (!r.cluster) lines.push('cluster: not asked (pass --kubeconfig to dry-run every object and run the preflight)');
  else {
    const c = r.cluster;
    lines.push(`cluster: Kubernetes ${c.version}, operator ${c.operator}`);
    lines.push(
      ...(c.refusals.length ? c.refusals.map((x) => `  preflight would refuse: ${x}`) : ['  preflight: passes']),
    );
    lines.push(...c.notes.map((x) => `  note: ${x}`));
    lines.push('server-side dry run as the operator:');
    lines.push(...c.dryRun.map((d) => `  ${d.result.padEnd(8)} ${d.object}${d.message ? `: ${d.message}` : ''}`));
    lines.push(wouldRefuse(c) ? 'baton up would be refused (see above)' : 'baton up would proceed');
  }
  return `${lines.join('\n')}\n`;
}
