import {
  type ClusterPlanCheck,
  checkImages,
  checkPlanOnCluster,
  type HandoffPreview,
  type ImageCheck,
  type LoadedPlan,
  loadHandoffPlan,
  loadManifestSet,
  type ManifestSet,
  previewHandoff,
  silentLogger,
} from '@baton/core';
import { ImageVerifyError } from '@baton/errors';
import { type Column, type Field, OUTPUT_FORMATS, renderFields, renderTable, screenOf } from '@baton/terminal';
import { Command, Option } from '@commander-js/extra-typings';
import { stringify } from 'yaml';
import { SKIP_IMAGE_VERIFY_FLAG, SKIP_IMAGE_VERIFY_WARNING } from '../shared/image-verify-flag.js';
import { operatorClients } from '../shared/operator-clients.js';

/** What `baton plan` prints: the push plan, and what the cluster says of it when one is named. */
export interface PlanReport {
  readonly plan: string;
  readonly profile: string;
  readonly preview: HandoffPreview;
  /** The images' signatures, checked as `baton up` checks them; `refused`: why `baton up` would refuse them. */
  readonly images: ImageCheck | { readonly verification: 'refused'; readonly image: string; readonly refused: string };
  readonly cluster?: ClusterPlanCheck;
}

/** The image check of `baton up`, with its refusal as a value: `baton plan` reports it instead of stopping. */
async function planImages(loaded: LoadedPlan, set: ManifestSet, skipVerify: boolean): Promise<PlanReport['images']> {
  try {
    return await checkImages(loaded.plan, set, silentLogger(), { skipVerify });
  } catch (err) {
    if (!(err instanceof ImageVerifyError)) throw err;
    return { verification: 'refused', image: String(err.details?.image ?? ''), refused: err.message };
  }
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
    .option(SKIP_IMAGE_VERIFY_FLAG, 'do not verify the images (as baton up would with the same flag)', false)
    .addOption(new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS).default('table' as const))
    .action(async (o) => {
      const loaded = loadHandoffPlan(o.plan);
      // Read and validated once: the preview and the image check work on the same set.
      const set = loadManifestSet(loaded.plan);
      const preview = previewHandoff(loaded, set);
      if (o.insecureSkipImageVerify) process.stderr.write(SKIP_IMAGE_VERIFY_WARNING);
      const images = await planImages(loaded, set, o.insecureSkipImageVerify);
      const c = loaded.plan.cluster;
      const named = o.kubeconfig ?? o.context ?? c.kubeconfig ?? c.kubeconfigContent;
      const cluster = named
        ? await checkPlanOnCluster(operatorClients(loaded, o.kubeconfig, o.context), loaded)
        : undefined;
      const report: PlanReport = {
        plan: loaded.file,
        profile: loaded.plan.push.profile,
        preview,
        images,
        ...(cluster ? { cluster } : {}),
      };
      if (o.output === 'json') process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      else if (o.output === 'yaml') process.stdout.write(stringify(report, { version: '1.1' }));
      else process.stdout.write(formatPlanReport(report, { ...screenOf(), wide: o.output === 'wide' }));
      if ((cluster && wouldRefuse(cluster)) || images.verification === 'refused') process.exitCode = 1;
    });
}

/** Whether `baton up` would stop at preflight or at the confinement's dry run. */
export function wouldRefuse(c: ClusterPlanCheck): boolean {
  return c.refusals.length > 0 || c.dryRun.some((d) => d.result === 'refused');
}

/** A server-side dry run's result row of `baton plan`. */
type DryRunRow = ClusterPlanCheck['dryRun'][number];
/** A rule of the push credential, as `baton plan` shows it. */
type RuleRow = HandoffPreview['rules'][number];

const OBJECT_COLUMNS: readonly Column<{ object: string; pushOnly: boolean }>[] = [
  { header: 'OBJECT', value: (x) => x.object, shrink: 'middle' },
  { header: 'PUSH ONLY', value: (x) => (x.pushOnly ? 'yes (never in Git)' : '') },
];

const RULE_COLUMNS: readonly Column<RuleRow>[] = [
  { header: 'VERBS', value: (x) => x.verbs.join(',') },
  { header: 'API GROUP', value: (x) => x.apiGroups.join(',') || 'core', shrink: 'middle' },
  { header: 'RESOURCES', value: (x) => x.resources.join(','), shrink: 'end' },
  { header: 'NAMES', value: (x) => (x.resourceNames ?? []).join(','), shrink: 'end' },
  { header: 'NAMESPACE', value: (x) => x.namespace ?? '(cluster)', shrink: 'middle' },
];

const DRY_RUN_COLUMNS: readonly Column<DryRunRow>[] = [
  { header: 'RESULT', value: (d) => d.result },
  { header: 'OBJECT', value: (d) => d.object, shrink: 'middle' },
  { header: 'MESSAGE', value: (d) => d.message ?? '', shrink: 'end' },
];

/**
 * The report as text for a person (`-o table`, or every value whole with `-o wide`): the plan as `key: value` lines,
 * then the objects, the credential's rules and, with a cluster, the dry run as tables that fit `screen.width`.
 */
export function formatPlanReport(r: PlanReport, screen: { readonly width: number; readonly wide?: boolean }): string {
  const p = r.preview;
  const c = p.confinement;
  const sections = [
    renderFields(
      [
        ['Plan', r.plan],
        ['Profile', r.profile],
        ['Plan digest', p.planDigest],
        ['Push credential', `ServiceAccount ${c.subject}`],
        [
          'Confinement',
          `ValidatingAdmissionPolicy ${c.policyName}, ${c.validationCount} validations, ${c.policyBytes} bytes`,
        ],
        ['Field manager', c.fieldManager],
        ['Pins', c.content],
      ],
      screen,
    ),
    `Objects (${p.objects.length}, in apply order):\n${renderTable(
      p.objects.map((object) => ({ object, pushOnly: p.pushOnly.includes(object) })),
      OBJECT_COLUMNS,
      screen,
    )}`,
    `Push credential's rules (${p.rules.length}):\n${renderTable(p.rules, RULE_COLUMNS, screen)}`,
    formatImages(r.images, screen),
  ];
  const k = r.cluster;
  if (!k)
    sections.push(
      renderFields(
        [['Cluster', 'not asked (pass --kubeconfig to dry-run every object and run the preflight)']],
        screen,
      ),
    );
  else
    sections.push(
      renderFields(
        [
          ['Cluster', `Kubernetes ${k.version}`],
          ['Operator', k.operator],
          ...(k.refusals.length
            ? k.refusals.map((x): Field => ['Preflight would refuse', x])
            : [['Preflight', 'passes'] as Field]),
          ...k.notes.map((n): Field => ['Note', n]),
        ],
        screen,
      ),
      `Server-side dry run as the operator:\n${renderTable(k.dryRun, DRY_RUN_COLUMNS, screen)}`,
      // A refusal's message is the reason and the fix: whole, wrapped, whatever the table had room for.
      ...k.dryRun
        .filter((d) => d.result === 'refused')
        .map((d) => renderFields([['Refused', `${d.object}: ${d.message ?? ''}`]], screen)),
      `${wouldRefuse(k) ? 'baton up would be refused (see above)' : 'baton up would proceed'}\n`,
    );
  return sections.join('\n');
}

const IMAGE_COLUMNS: readonly Column<{ image: string; signedBy: string }>[] = [
  { header: 'IMAGE', value: (x) => x.image, shrink: 'middle' },
  { header: 'SIGNED BY', value: (x) => x.signedBy, shrink: 'end' },
];

/** The images section: each image with the key that signed it, or why it is not verified. */
function formatImages(
  images: PlanReport['images'],
  screen: { readonly width: number; readonly wide?: boolean },
): string {
  if (images.verification === 'refused')
    return renderFields(
      [
        ['Images', 'baton up would refuse them'],
        ['Refused', images.refused],
      ],
      screen,
    );
  if (images.verification !== 'verified')
    return renderFields(
      [
        [
          'Images',
          images.verification === 'skipped'
            ? `${images.images.length} NOT verified (${SKIP_IMAGE_VERIFY_FLAG})`
            : `${images.images.length} NOT verified: no trust policy (the profile's imageTrust, or the plan's push.images.trustedKeys or keyless)`,
        ],
      ],
      screen,
    );
  const signedBy = new Map([
    ...images.verified.map(
      (v) => [v.image, v.provenance ? `${v.signedBy}; built by ${v.provenance.builder}` : v.signedBy] as const,
    ),
    ...(images.unsigned ?? []).map((u) => [u.image, `unsigned, as ${u.rule} allows: ${u.reason}`] as const),
  ]);
  const unsigned = images.unsigned?.length ?? 0;
  return `${renderFields(
    [
      [
        'Images',
        unsigned === 0
          ? `${images.images.length}, each signed by a trusted key`
          : `${images.images.length}: ${images.images.length - unsigned} signed by a trusted key, ${unsigned} unsigned as a rule allows`,
      ],
      ['Trust policy', images.policy ?? ''],
    ],
    screen,
  )}${renderTable(
    images.images.map((image) => ({ image, signedBy: signedBy.get(image) ?? '' })),
    IMAGE_COLUMNS,
    screen,
  )}`;
}
