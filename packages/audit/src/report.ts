import { readEntries } from './read-entries.js';
import { renderReport } from './render-report.js';
import { ReportBuilder, type ReportModel } from './report-model.js';
import type { TrustedKeySet } from './trusted-keys.js';
import { verifyLog } from './verify-log.js';

/** Options of {@link buildReport}. */
export interface BuildReportOptions {
  /** Trusted keys: when given, the log is verified and the result heads the report. */
  readonly keys?: TrustedKeySet;
  /** Clock for the "generated" line. @default () => new Date() */
  readonly now?: () => Date;
  /** Handoffs shown in detail (the most recent). @default 300 */
  readonly recent?: number;
  /** Worker threads for verification (see verifyLog). */
  readonly workers?: number;
}

/**
 * Builds the HTML review report for a log: verifies it (when keys are given), streams its entries into the report
 * model and renders one self-contained page. Lines that cannot be decoded are left out of the charts; the
 * verification section says why.
 * @throws {ConfigError} when the log cannot be read.
 */
export async function buildReport(
  logPath: string,
  options: BuildReportOptions = {},
): Promise<{ html: string; model: ReportModel }> {
  const verification = options.keys
    ? await verifyLog(logPath, options.keys, options.workers !== undefined ? { workers: options.workers } : {})
    : undefined;
  const builder = new ReportBuilder(options.recent !== undefined ? { recent: options.recent } : {});
  for await (const entry of readEntries(logPath, { onBadLine: () => {}, onFleetEvent: (e) => builder.addFleet(e) }))
    builder.add(entry);
  const model = builder.build(logPath, (options.now ?? (() => new Date()))(), verification);
  return { html: renderReport(model), model };
}
