import type { HandoffSummary } from '@baton/core';
import type { Field } from '@baton/terminal';

/** The handoff summary as `key: value` lines for `-o table|wide` (empty ones are left out). */
export function summaryFields(s: HandoffSummary): Field[] {
  const rows: [string, string | number | boolean | undefined][] = [
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
    [
      'tampered',
      s.tampering
        ? `${s.tampering.objects.map((o) => `${o.object} (${o.fields.join(', ')})`).join('; ')} found by the ${s.tampering.detectedBy}`
        : undefined,
    ],
    [
      'repair',
      s.tampering?.repair
        ? `${s.tampering.repair.outcome} in ${s.tampering.repair.repairSeconds} s: pushed again ${s.tampering.repair.repushed.join(', ') || 'nothing'}; restarted ${s.tampering.repair.restarted.join(', ') || 'nothing'}${s.tampering.repair.stopped.length > 0 ? `; deleted ${s.tampering.repair.stopped.join(', ')}` : ''}`
        : undefined,
    ],
    ['credential', s.credential?.subject],
    ['credential fingerprint', s.credential?.fingerprint],
    ['credential live seconds', s.credential?.liveSeconds],
    ['write window seconds', s.credential?.writeWindowSeconds],
    ['privilege window seconds', s.credential?.privilegeWindowSeconds],
    [
      'confinement',
      s.confinement
        ? `${s.confinement.policyName}: ${s.confinement.allowed.length} planned objects (plan ${s.confinement.planDigest}); probe outside the plan ${s.confinement.probeDenied ? 'denied' : 'NOT denied'}; ${s.confinement.closedAt ? `closed at ${s.confinement.closedAt}` : 'never closed'}${s.confinement.kept ? `; ${s.confinement.kept}` : ''}`
        : undefined,
    ],
    ['suspicious objects (left alone)', s.suspicious?.join(', ')],
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
  return rows.filter(([, v]) => v !== undefined && v !== '');
}
