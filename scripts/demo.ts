// `pnpm demo`: a complete handoff on a fresh local cluster with a local Git server, then a summary.
//   pnpm demo -- --json         one JSON object on stdout
//   pnpm demo -- --keep         leave the cluster running (stop it with `pnpm baton testenv down --name <name>`)
//   pnpm demo -- --test-controller   hand off to the small test profile and its in-process helper instead
// By default the push installs bootstrap-manifests/baton-controller; kwok runs no containers, so testenv's pod
// runner plays kubelet for the controller image (packages/controller/src/main.ts with its pod's token).
import { createLogger, type HandoffSummary } from '@baton/core';
import { startLocalHandoff } from '../test/support/local-handoff.js';

const args = process.argv.slice(2);
const json = args.includes('--json');
const keep = args.includes('--keep');
const controller = args.includes('--test-controller') ? 'test-helper' : 'baton-controller';
const err = (line: string) => process.stderr.write(`${line}\n`);

err('starting a local cluster (kube-apiserver, etcd, controller-manager, scheduler, kwok) and a Git server…');
const t0 = performance.now();
const local = await startLocalHandoff({ detached: keep, name: `demo-${process.pid}`, controller });
err(`cluster ${local.clusterName} ready in ${((performance.now() - t0) / 1000).toFixed(1)} s; handing off…`);
const ac = new AbortController();
const onSignal = (sig: NodeJS.Signals) =>
  ac.abort(new Error(`received ${sig}; revoking the bootstrap credential before exit`));
process.once('SIGINT', onSignal);
process.once('SIGTERM', onSignal);
let exitCode = 1;
try {
  const s = await local.run(createLogger({ pretty: !json && process.stderr.isTTY === true }), ac.signal);
  const summary = {
    outcome: s.outcome,
    ...(s.error ? { error: s.error, failedStep: s.failedStep } : {}),
    runId: s.runId,
    revision: s.revision,
    cluster: {
      name: local.clusterName,
      server: s.cluster.server,
      kubeconfigPath: local.kubeconfigPath,
      apiserverAuditLogPath: local.apiserverAuditLogPath,
      kept: keep,
    },
    credential: s.credential,
    confinement: s.confinement,
    proof: s.proof,
    readinessSeconds: s.readinessSeconds,
    overheadSeconds: s.overheadSeconds,
    totalSeconds: s.totalSeconds,
    takeover: s.takeover,
    stepDurationsMs: s.stepDurationsMs,
    audit: {
      logPath: local.env.auditLogPath,
      keysPath: local.env.keysPath,
      index: s.audit?.index,
      eventId: s.audit?.eventId,
      eventDigest: s.audit?.eventDigest,
    },
    controller: local.controller,
  };
  if (json) process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  else {
    const c = s.credential;
    process.stdout.write(
      [
        `outcome:            ${s.outcome}${s.error ? ` (${s.error})` : ''}`,
        `revision:           ${s.revision}`,
        `bootstrap identity: ${c?.subject} (${c?.fingerprint}, jti ${c?.jti})`,
        `credential lived:   ${c?.liveSeconds} s (issued ${c?.issuedAt}, refused from ${c?.revokedAt})`,
        `scoped to:          ${c?.rules.length} rules, no wildcard, no cluster-admin`,
        confinedLine(s.confinement, c?.writeWindowSeconds),
        `readiness wait:     ${s.readinessSeconds} s; orchestration overhead ${s.overheadSeconds} s`,
        `proof:              HTTP ${s.proof?.probeStatus} with the old token; TokenReview authenticated=${s.proof?.tokenReviewAuthenticated} at ${s.proof?.provedAt}`,
        `audit:              ${local.env.auditLogPath} #${s.audit?.index} (verify: pnpm baton audit verify ${local.env.auditLogPath} --keys ${local.env.keysPath})`,
        `kubeconfig:         ${local.kubeconfigPath}`,
        '',
      ].join('\n'),
    );
  }
  exitCode = s.outcome === 'handed-off' ? 0 : 1;
} finally {
  await local.stop({ keepCluster: keep });
  if (keep)
    err(
      `cluster ${local.clusterName} is still running; stop it with: pnpm baton testenv down --name ${local.clusterName}`,
    );
}
process.exitCode = exitCode;

/** "confined to the plan" only when the policy denied a write outside the plan and closed after the push. */
function confinedLine(c: HandoffSummary['confinement'], writeWindowSeconds: number | undefined): string {
  if (!c) return 'confinement:        none (the run ended before it was installed)';
  if (!c.probeDenied) return `confinement:        NOT proven: ${c.policyName} did not deny a write outside the plan`;
  return `confined to the plan: ${c.allowed.length} objects (${c.planDigest.slice(0, 19)}…) by ${c.policyName}; writes ended ${writeWindowSeconds} s after issue${c.closedAt ? '' : ' (never closed)'}`;
}
