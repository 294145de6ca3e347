// `kill -9` of `baton up` mid-push, then `baton up` again, against a bed with a GitOps controller: what every profile's
// test asserts of it (the killed run's leftovers found and removed, handed off, two credentials both revoked, nothing
// secret in any output or in the audit log).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { readEntries } from '@baton/audit';
import type { HandoffSummary } from '@baton/core';
import { clientsFromKubeconfigFile, findBootstrapLeftovers } from '@baton/kube';
import type { ControllerSide, HandoffBed } from '@baton/testenv/beds';
import { expect } from 'vitest';
import { bootstrapMints, JWT_PATTERN, killDuringPush, runBaton } from './handoff-run.js';
import { adminClients, confinementsLeft } from './kube.js';

const _execFileAsync = promisify(execFile);

/**
 * Kills `baton up --plan` with SIGKILL once it is pushing, runs it again, and asserts that the second run handed off,
 * removed the first run's leftovers and that both runs' credentials (two mints since `startedMs`) were revoked.
 * @returns the second run's summary.
 */
export async function expectKillMidPushThenHandOff(
  bed: HandoffBed<ControllerSide>,
  startedMs: number,
): Promise<HandoffSummary> {
  const admin = clientsFromKubeconfigFile(bed.kubeconfigPath);
  const killed = await killDuringPush(bed.side.planPath);
  expect(killed.signal).toBe('SIGKILL');
  const killedRunId = /"runId":"([^"]+)"/.exec(killed.stderr)?.[1] ?? '';
  expect((await findBootstrapLeftovers(admin, 'baton-system')).map((l) => l.runId)).toEqual([killedRunId]);

  const { stdout, stderr } = await runBaton(['up', '--plan', bed.side.planPath, '-o', 'json']);
  const s = JSON.parse(stdout) as HandoffSummary;
  expect(s.outcome, s.error).toBe('handed-off');
  expect(s.leftoversRemoved).toContain(`Secret/baton-system/baton-bootstrap-${killedRunId}`);
  expect(stdout + stderr).not.toMatch(JWT_PATTERN);
  for (const secret of bed.side.secretValues) expect(stdout + stderr).not.toContain(secret);
  expect(await findBootstrapLeftovers(admin, 'baton-system')).toEqual([]);
  expect(await confinementsLeft(adminClients(bed.kubeconfigPath))).toEqual([]);

  // Two runs, two credentials (one each; a killed run's token died with it and cannot be reused), both revoked.
  expect(bootstrapMints(bed.apiserverAuditLogPath!, startedMs)).toHaveLength(2);
  const events = [];
  for await (const e of readEntries(bed.side.auditLogPath)) events.push(e.statement.predicate);
  expect(events.map((e) => [e.runId, e.outcome])).toEqual([
    [killedRunId, 'aborted'],
    [s.runId, 'handed-off'],
  ]);
  expect(events.every((e) => e.credential?.revokedAt)).toBe(true);
  expect(new Set(events.map((e) => e.credential?.fingerprint)).size).toBe(2);
  const auditText = readFileSync(bed.side.auditLogPath, 'utf8');
  for (const secret of bed.side.secretValues) expect(auditText).not.toContain(secret);
  return s;
}
