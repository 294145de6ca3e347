import type { HandoffSummary } from '@baton/core';

/** The handoff summary as key/value rows for `-o table`. */
export function summaryRows(s: HandoffSummary): { field: string; value: string }[] {
  const rows: [string, unknown][] = [
    ['outcome', s.outcome],
    ['run', s.runId],
    ['cluster', `${s.cluster.name} (${s.cluster.server})`],
    ['revision', s.revision],
    ['failed step', s.failedStep],
    ['error', s.error],
    [
      'resumed',
      s.resumed
        ? `completed run ${s.resumed.runId ?? '(unknown)'}, killed after the takeover; nothing minted or pushed; ${s.resumed.note}`
        : undefined,
    ],
    ['credential', s.credential?.subject],
    ['credential fingerprint', s.credential?.fingerprint],
    ['credential live seconds', s.credential?.liveSeconds],
    ['readiness seconds', s.readinessSeconds],
    ['overhead seconds', s.overheadSeconds],
    [
      'proof',
      s.proof
        ? `HTTP ${s.proof.probeStatus}, TokenReview authenticated=${s.proof.tokenReviewAuthenticated} at ${s.proof.provedAt}`
        : undefined,
    ],
    ['audit', s.audit ? `${s.audit.logPath} #${s.audit.index}` : undefined],
    ['leftovers removed', s.leftoversRemoved.length > 0 ? s.leftoversRemoved.join(', ') : undefined],
    ['total seconds', s.totalSeconds],
  ];
  return rows.filter(([, v]) => v !== undefined && v !== '').map(([field, value]) => ({ field, value: String(value) }));
}
