import { appendFileSync } from 'node:fs';
import type { HandoffSummary } from '@baton/core';

/** Where `pnpm test:compat` collects the numbers of each version's handoffs (JSON lines); unset elsewhere. */
export const COMPAT_METRICS_ENV = 'BATON_COMPAT_METRICS';

/**
 * Appends the windows and policy size of a finished handoff to the compat run's metrics file, for its table
 * (scripts/test-compat.ts). Does nothing outside `pnpm test:compat`.
 */
export function recordCompatMetrics(test: string, summary: HandoffSummary): void {
  const path = process.env[COMPAT_METRICS_ENV];
  if (!path) return;
  const line = {
    test,
    kubernetes: process.env.BATON_KUBERNETES_VERSION ?? 'default',
    outcome: summary.outcome,
    liveSeconds: summary.credential?.liveSeconds ?? null,
    writeWindowSeconds: summary.credential?.writeWindowSeconds ?? null,
    policyBytes: summary.confinement?.policyBytes ?? null,
    validationCount: summary.confinement?.validationCount ?? null,
  };
  appendFileSync(path, `${JSON.stringify(line)}\n`);
}
