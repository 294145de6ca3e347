import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@baton/errors';
import { afterAll, describe, expect, test } from 'vitest';
import { AuditLog } from './audit-log.js';
import { checkEntry } from './check-entry.js';
import { type FleetRecord, FleetRecordSchema } from './fleet-record.js';
import { createFleetEvent, createHandoffEvent, serializeEntry } from './handoff-event.js';
import { type DecodedFleetEntry, readEntries } from './read-entries.js';
import { renderReport } from './render-report.js';
import { ReportBuilder } from './report-model.js';
import { SigningKey } from './signing-key.js';
import { synthRecords } from './synth.js';
import { TrustedKeySet } from './trusted-keys.js';
import { verifyLog } from './verify-log.js';

const key = SigningKey.fromSeed('test-key', Buffer.alloc(32, 1));
const keys = new TrustedKeySet({ origin: 'test/log', keys: [{ key: key.verifierKey }] });
const handoffs = [...synthRecords(3, { seed: 5 })];
const started: FleetRecord = {
  fleetRunId: 'fleet-20270101-abc',
  phase: 'started',
  fleet: { name: 'edge', fileDigest: `sha256:${'a'.repeat(64)}`, clusterCount: 3 },
  actor: { user: 'ci', host: 'runner-1', via: 'fleet' },
  engine: 'local',
  policy: { concurrency: 4, failureBudget: 0, retries: 1 },
  startedAt: '2026-01-01T00:00:00.000Z',
  waves: [
    { index: 0, name: 'canary', clusters: [{ name: 'edge-1' }] },
    { index: 1, name: 'rest', clusters: [{ name: 'edge-2' }, { name: 'edge-3' }] },
  ],
};
const finished: FleetRecord = {
  ...started,
  phase: 'finished',
  finishedAt: '2026-01-01T00:05:00.000Z',
  outcome: 'halted',
  failed: 1,
  waves: [
    { index: 0, name: 'canary', clusters: [{ name: 'edge-1', status: 'failed', attempts: 2, runId: 'r1' }] },
    {
      index: 1,
      name: 'rest',
      clusters: [
        { name: 'edge-2', status: 'not-started' },
        { name: 'edge-3', status: 'not-started' },
      ],
    },
  ],
};
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('fleet events', () => {
  test('a fleet-started event binds id, subject, type and time to its signed record and verifies', async () => {
    const event = await createFleetEvent(started, key);
    expect(event).toMatchObject({
      id: 'fleet-20270101-abc.started',
      source: 'urn:baton:fleet',
      type: 'dev.baton.fleet.v1',
      subject: 'fleet/edge',
      time: started.startedAt,
    });
    const check = checkEntry(Buffer.from(serializeEntry(event, 0, '2026-01-01T00:00:01.000Z')), keys, true);
    expect(check.problem).toBeUndefined();
    expect(check.statement?.predicateType).toBe('https://baton.dev/fleet/v1');
    // Posing as a handoff event breaks the binding.
    const posed = { ...event, type: 'dev.baton.handoff.v1' as const };
    const bad = checkEntry(Buffer.from(serializeEntry(posed, 0, '2026-01-01T00:00:01.000Z')), keys);
    expect(bad.problem).toEqual({
      kind: 'binding',
      message: 'has envelope type "dev.baton.handoff.v1" but its signed statement says "dev.baton.fleet.v1"',
    });
  });

  test('fleet-finished needs finishedAt, an outcome and every cluster’s status', async () => {
    const noStatus = structuredClone(finished);
    delete (noStatus.waves[1]!.clusters[0] as { status?: unknown }).status;
    expect(FleetRecordSchema.safeParse(noStatus).error?.issues[0]?.path).toEqual(['waves', 1, 'clusters', 0, 'status']);
    await expect(createFleetEvent({ ...finished, outcome: undefined } as unknown as FleetRecord, key)).rejects.toThrow(
      ConfigError,
    );
    await expect(createFleetEvent({ ...started, finishedAt: started.startedAt }, key)).rejects.toThrow(
      /fleet record finishedAt: is required in fleet-finished only/,
    );
  });

  test('fleet and handoff events share one log that verifies; readers and the report see the rollout per wave', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fleet-audit-'));
    dirs.push(dir);
    const path = join(dir, 'handoffs.jsonl');
    const log = await AuditLog.open(path, { origin: 'test/log', signer: key, now: () => new Date('2027-01-01') });
    await log.append(await createFleetEvent(started, key));
    await log.appendMany(await Promise.all(handoffs.map((r) => createHandoffEvent(r, key))));
    await log.append(await createFleetEvent(finished, key));
    await log.close();

    const result = await verifyLog(path, keys);
    expect(result.failures).toEqual([]);
    expect(result.entries).toBe(5);

    const fleetEvents: DecodedFleetEntry[] = [];
    const builder = new ReportBuilder();
    const handoffIndexes: number[] = [];
    const onFleetEvent = (f: DecodedFleetEntry) => {
      fleetEvents.push(f);
      builder.addFleet(f);
    };
    for await (const e of readEntries(path, { onFleetEvent })) {
      handoffIndexes.push(e.index);
      builder.add(e);
    }
    expect(handoffIndexes).toEqual([1, 2, 3]);
    expect(fleetEvents.map((f) => [f.index, f.statement.predicate.phase])).toEqual([
      [0, 'started'],
      [4, 'finished'],
    ]);
    const model = builder.build(path, new Date('2027-01-02'), result);
    expect(model.totals.handoffs).toBe(3);
    expect(model.fleetRuns).toHaveLength(1);
    expect(model.fleetRuns[0]).toMatchObject({
      outcome: 'halted',
      budget: { allowed: 0, failed: 1 },
      waves: [
        { name: 'canary', handedOff: 0, failed: 1, notStarted: 0 },
        { name: 'rest', handedOff: 0, failed: 0, notStarted: 2 },
      ],
    });
    const html = renderReport(model);
    expect(html).toContain('<section id="fleet"><h2>Fleet rollouts</h2>');
    expect(html).toContain('failed 1 of budget 0');
    expect(html).toContain('<span class="c not-started" title="not-started">edge-3</span>');
  });
});
