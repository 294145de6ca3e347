// `pnpm demo`: a complete handoff on a fresh local cluster with a local Git server, then a summary.
//   pnpm demo                   `pulumi up` of stacks/local (the real engine, the test bed's Node.js language host)
//   pnpm demo -- --via cli      `baton up`'s engine in-process instead
//   pnpm demo -- --json         one JSON object on stdout
//   pnpm demo -- --keep         leave the cluster, its Git server and the controller running (`testenv up --bed`'s
//                               host; Argo CD: the cluster only); stop them with `pnpm baton testenv down --name <name>`
//   pnpm demo -- --profile flux hand the cluster to real Flux (source- and kustomize-controller built from Go modules
//                               on first use, minutes on a cold machine, before the cluster starts); stacks/local
//                               takes the profile as config, so both --via pulumi (the default) and --via cli work
// The push installs bootstrap-manifests/<profile> on the bed's real node: kubelet pulls the controller's pinned
// image (or Flux's and Argo CD's, built here from their modules) from the bed's registry and runs it with
// containerd. The plan, the audit log and its keys stay in .baton/demo/<cluster>/ (the pull and webhook secrets are
// removed).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type HandoffSummary, loadHandoffPlan } from '@baton/core';
import { createRunLog, createStepView, planFacts } from '@baton/progress';
import type { HandoffReceipt } from '@baton/pulumi';
import { apiserverRequestsBy, identityActivity } from '@baton/testenv';
import { type ControllerSide, ensureFluxControllers, type HandoffBed } from '@baton/testenv/beds';
import { batonUpInProcess } from './demo/baton-up.js';
import { startDemoBed, startKeptDemoBed } from './demo/bed.js';
import { type PulumiUpResult, pulumiUp } from './demo/pulumi-up.js';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const json = args.includes('--json');
const keep = args.includes('--keep');
const verbose = args.includes('--verbose');
const option = (flag: string) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : undefined);
const profile = option('--profile') ?? 'baton-controller';
if (profile !== 'baton-controller' && profile !== 'flux' && profile !== 'argocd') {
  process.stderr.write('demo: --profile takes `baton-controller` (the default), `flux` or `argocd`\n');
  process.exit(2);
}
const via = option('--via') ?? 'pulumi';
if (via !== 'cli' && via !== 'pulumi') {
  process.stderr.write('demo: --via takes `pulumi` (the default) or `cli`\n');
  process.exit(2);
}
const err = (line: string) => process.stderr.write(`${line}\n`);

/** The run as both paths report it (a HandoffSummary from `baton up`, a HandoffReceipt from the stack output). */
type DemoRun = Pick<HandoffSummary, 'runId' | 'stepDurationsMs' | 'totalSeconds'> & {
  readonly outcome: string;
  readonly error?: string | undefined;
  readonly failedStep?: string | undefined;
  readonly revision?: string | null | undefined;
  readonly credential?: HandoffReceipt['credential'] | HandoffSummary['credential'];
  readonly confinement?: HandoffSummary['confinement'] | null;
  readonly proof?: HandoffSummary['proof'] | null;
  readonly readinessSeconds?: number | null | undefined;
  readonly overheadSeconds?: number | null | undefined;
  readonly takeover?: HandoffSummary['takeover'] | null;
  readonly audit?: { readonly index: number; readonly eventId: string; readonly eventDigest: string } | null;
};

const name = `demo-${process.pid}`;
const demoDir = join(REPO_ROOT, '.baton', 'demo', name);
const errorLogPath = join(demoDir, 'demo-error.log');
// Whatever escapes (a failed build, a cluster that does not start, a bug): its message, where the whole of it is,
// and exit 1 — never a bare stack trace and never exit 0.
const fail = (e: unknown) => {
  mkdirSync(demoDir, { recursive: true });
  writeFileSync(errorLogPath, `${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n${causes(e)}`);
  err(`demo: failed: ${e instanceof Error ? e.message : String(e)}\ndemo: the whole error is in ${errorLogPath}`);
  process.exit(1);
};
process.on('uncaughtException', fail);
process.on('unhandledRejection', fail);
// Flux's controllers are built (minutes when cold) before the cluster starts, so no cluster sits idle meanwhile.
if (profile === 'flux') err('Flux: building source-controller and kustomize-controller from Go modules unless cached…');
const fluxControllers = profile === 'flux' ? await ensureFluxControllers({ onProgress: err }).catch(fail) : undefined;
err(
  'starting a local cluster (kube-apiserver, etcd, controller-manager, scheduler, and a real node: kubelet, containerd, kube-proxy, CoreDNS) and a Git server…',
);
const t0 = performance.now();
if (profile === 'argocd') err('Argo CD: building v3.6.1 from Go modules (Go 1.27.3 toolchain) unless cached…');
// Kept, the bed runs in the background host of `baton testenv up --bed`, so the controller keeps pulling after the demo.
const keptBed = keep && profile !== 'argocd';
mkdirSync(demoDir, { recursive: true });
const bed: HandoffBed<ControllerSide> = await (keptBed
  ? startKeptDemoBed({ name, profile: profile === 'flux' ? 'flux' : 'baton-controller' })
  : fluxControllers
    ? startDemoBed({ name, detached: keep, dir: demoDir, profile: 'flux', controllers: fluxControllers })
    : profile === 'argocd'
      ? startDemoBed({ name, detached: keep, dir: demoDir, profile: 'argocd', onBuildProgress: err })
      : startDemoBed({ name, detached: keep, dir: demoDir })
).catch(fail);
err(
  `cluster ${bed.clusterName} ready in ${seconds(t0)} s; handing off through ${via === 'cli' ? '`baton up` (in-process)' : '`pulumi up` of stacks/local'}…`,
);
const ac = new AbortController();
const onSignal = (sig: NodeJS.Signals) => {
  if (via === 'pulumi')
    err(`received ${sig}; waiting for \`pulumi up\` to finish the handoff (it revokes the credential)…`);
  ac.abort(new Error(`received ${sig}; revoking the bootstrap credential before exit`));
};
process.once('SIGINT', onSignal);
process.once('SIGTERM', onSignal);
let exitCode = 1;
let run: DemoRun | undefined;
let pulumi: PulumiUpResult | undefined;
let activity: ReturnType<typeof identitySummary> = null;
try {
  if (via === 'cli') {
    // What `baton up` shows: the step view on stderr, the full log in a file (on stderr with --verbose).
    const view = createStepView({ out: process.stderr, facts: planFacts(loadHandoffPlan(bed.side.planPath)) });
    const { log, path } = createRunLog({
      verbose,
      file: join(demoDir, 'logs', `up-${bed.clusterName}.log`),
      onRecord: view.onRecord,
    });
    if (path) err(`full log: ${relative(REPO_ROOT, path)}`);
    try {
      run = await batonUpInProcess(bed, log, ac.signal, view.onStep);
    } finally {
      await view.finish(run as HandoffSummary | undefined);
    }
  } else {
    // pulumi up's own progress (its resource lines) on stderr while it runs; stdout stays for --json.
    pulumi = await pulumiUp(bed, demoDir, ac.signal, undefined, { onOutput: (t) => process.stderr.write(t) });
    run = pulumi.receipt ?? failedUpdate(pulumi);
  }
  exitCode = run.outcome === 'handed-off' ? 0 : 1;
  // Read before the cluster (and its audit log) goes.
  activity = identitySummary(run);
} catch (e) {
  await bed.stop({ keepCluster: keep, keepFiles: true }).catch(() => undefined);
  fail(e);
} finally {
  await bed.stop({ keepCluster: keep, keepFiles: true });
  // The Git server is gone; its password and the webhook key have no business staying on disk. A kept bed's Git server
  // still runs: its files stay with it until `testenv down`.
  const side: ControllerSide & { webhookSecretPath?: string } = bed.side;
  if (!keptBed)
    await Promise.all(
      [side.pullCredentialPath, side.webhookSecretPath ?? ''].filter(Boolean).map((p) => rm(p, { force: true })),
    );
}
if (run) print(run, pulumi);
if (keep)
  err(
    `cluster ${bed.clusterName} is still running${keptBed ? `, with its Git server and ${profile} pulling from it (the bed's plan and files: ${bed.side.dir})` : ''}; stop it with: pnpm baton testenv down --name ${bed.clusterName}`,
  );
process.exitCode = exitCode;

/** A failed `pulumi up` keeps no receipt in state: the run is what the CLI said. */
function failedUpdate(p: PulumiUpResult): DemoRun {
  return { outcome: 'failed', runId: '', error: p.error, stepDurationsMs: {}, totalSeconds: p.updateSeconds };
}

/** A path when it still exists (the cluster's files go with it unless kept), else null. */
function existing(path: string | null): string | null {
  return path && existsSync(path) ? path : null;
}

function print(r: DemoRun, p: PulumiUpResult | undefined): void {
  const auditLogPath = existing(bed.side.auditLogPath);
  const keysPath = existing(bed.side.keysPath);
  // baton-controller's pods run the image the profile pins, pulled by digest (Flux's and Argo CD's from Go modules).
  const controllerImage = 'controllerImage' in bed.side ? (bed.side.controllerImage as string | null) : null;
  const summary = {
    outcome: r.outcome,
    ...(r.error ? { error: r.error, failedStep: r.failedStep } : {}),
    runId: r.runId,
    revision: r.revision,
    via,
    cluster: {
      name: bed.clusterName,
      server: bed.server,
      kubeconfigPath: existing(bed.kubeconfigPath),
      apiserverAuditLogPath: existing(bed.apiserverAuditLogPath),
      kept: keep,
    },
    credential: r.credential,
    confinement: r.confinement,
    proof: r.proof,
    readinessSeconds: r.readinessSeconds,
    overheadSeconds: r.overheadSeconds,
    totalSeconds: r.totalSeconds,
    takeover: r.takeover,
    stepDurationsMs: r.stepDurationsMs,
    audit: {
      logPath: auditLogPath,
      keysPath,
      index: r.audit?.index,
      eventId: r.audit?.eventId,
      eventDigest: r.audit?.eventDigest,
    },
    ...(p
      ? {
          pulumi: {
            stack: p.stack,
            updateSeconds: p.updateSeconds,
            statePath: existing(p.statePath),
            logPath: existing(p.logPath),
          },
        }
      : {}),
    controller: profile,
    controllerImage,
    bootstrapIdentity: activity,
  };
  if (json) {
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    return;
  }
  const c = r.credential;
  const rel = (path: string) => relative(process.cwd(), path) || path;
  const lines = [
    `outcome:            ${r.outcome}${r.error ? ` (${r.error})` : ''}`,
    `revision:           ${r.revision}`,
    `bootstrap identity: ${c?.subject} (${c?.fingerprint}, jti ${c?.jti})`,
    `credential lived:   ${c?.liveSeconds} s (issued ${c?.issuedAt}, refused from ${c?.revokedAt})`,
    `scoped to:          ${c?.rules.length} rules, no wildcard, no cluster-admin`,
    confinedLine(r.confinement, c?.writeWindowSeconds),
    `privilege ended:    ${c?.privilegeWindowSeconds ?? 'not confirmed'} s after issue (bindings deleted; get on the planned Secrets denied to the token)`,
    `readiness wait:     ${r.readinessSeconds} s; orchestration overhead ${r.overheadSeconds} s`,
    ...(controllerImage
      ? [`controller image:   ${controllerImage}, pulled by digest from the test bed's registry`]
      : []),
    `taken over by:      ${profile}: ${r.takeover?.ownedObjects.length ?? 0} pushed objects now owned from Git at ${r.takeover?.revisionSeen}; ${r.takeover?.pushOnly.length ?? 0} push-only`,
    ...(activity
      ? [
          `apiserver saw:      ${activity.requests} requests by the identity: ${activity.allowedWrites} stored writes, ${activity.dryRuns} dry runs, ${activity.denied} denied (baton's own probes)`,
        ]
      : []),
    `proof:              HTTP ${r.proof?.probeStatus} with the old token; TokenReview authenticated=${r.proof?.tokenReviewAuthenticated} at ${r.proof?.provedAt}`,
  ];
  if (p)
    lines.push(
      `pulumi up:          stack ${p.stack}, ${p.updateSeconds} s; state copy ${rel(p.statePath)}, output ${rel(p.logPath)}`,
    );
  if (auditLogPath && keysPath && r.audit)
    lines.push(
      `audit:              ${rel(auditLogPath)} #${r.audit.index} (verify: pnpm baton audit verify ${rel(auditLogPath)} --keys ${rel(keysPath)})`,
    );
  else lines.push('audit:              no event recorded');
  const kubeconfig = existing(bed.kubeconfigPath);
  lines.push(
    kubeconfig
      ? `kubeconfig:         ${kubeconfig}`
      : 'cluster:            stopped and removed (run with --keep to keep it)',
  );
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** What the bootstrap identity did, from the apiserver's audit log (null without one). */
function identitySummary(r: DemoRun) {
  const path = existing(bed.apiserverAuditLogPath);
  if (!path || !r.credential?.subject) return null;
  return identityActivity(apiserverRequestsBy(path, r.credential.subject));
}

/** "confined to the plan" only when the policy denied a write outside the plan and closed after the push. */
function confinedLine(c: DemoRun['confinement'], writeWindowSeconds: number | null | undefined): string {
  if (!c) return 'confinement:        none (the run ended before it was installed)';
  if (!c.probeDenied) return `confinement:        NOT proven: ${c.policyName} did not deny a write outside the plan`;
  return `confined to the plan: ${c.allowed.length} objects (${c.planDigest.slice(0, 19)}…) by ${c.policyName}; writes ended ${writeWindowSeconds} s after issue${c.closedAt ? '' : ' (never closed)'}`;
}

/** The messages of an error's causes, one per line. */
function causes(e: unknown): string {
  let text = '';
  for (let c = (e as Error | undefined)?.cause; c; c = (c as Error).cause)
    text += `caused by: ${String((c as Error).stack ?? c)}\n`;
  return text;
}

function seconds(from: number): string {
  return ((performance.now() - from) / 1000).toFixed(1);
}
