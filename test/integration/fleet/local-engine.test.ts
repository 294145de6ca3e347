import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type DecodedFleetEntry, type HandoffRecord, loadTrustedKeys, readEntries, verifyLog } from '@baton/audit';
import { type HandoffSummary, Journal } from '@baton/core';
import type { ClusterResult } from '@baton/fleet';
import { clientsFromKubeconfigFile, deploymentState } from '@baton/kube';
import {
  type BatonControllerEnv,
  deleteNamespacesAndWait,
  type RealFleetTarget,
  setSchedulable,
  startRealFleetTargets,
  stopRealFleetTargets,
  targetOverrides,
  writeFleetFile,
  writeFleetTemplate,
} from '@baton/testbed';
import type { Cluster } from '@baton/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fleetUp, spawnFleetUp } from '../../support/fleet-env.js';
import { bootstrapMints, JWT_PATTERN } from '../../support/handoff-run.js';
import { eventually } from '../../support/kube.js';

// One set of 8 real clusters for every case of the local engine (about 6 GB), each with a real node where
// baton-controller takes over from its own bed's Git server: cases that need clusters never handed off reset some of
// them first (baton-system deleted). A controller is held back by cordoning its node (its Pod stays Pending). A
// handoff mostly waits, but 8 of them on 2 shared cores take minutes: each case has a generous deadline (a timing, not
// a product, assertion).
const CASE_MS = 1_200_000;

let targets: RealFleetTarget[] = [];
let clusters: Cluster[] = [];
/** The template's side: its plan is the fleet's defaults; its audit log and journal are the fleet's. */
let env: BatonControllerEnv;
let template = '';
const NAMESPACES = ['baton-system'];
const names = () => clusters.map((c) => c.name);
const file = (name: string) => join(env.dir, `${name}.yaml`);
const statuses = (r: { waves: readonly { clusters: readonly ClusterResult[] }[] }) =>
  r.waves.map((w) => w.clusters.map((c) => [c.name, c.status]));

async function logEntries() {
  const fleet: DecodedFleetEntry[] = [];
  const handoffs: HandoffRecord[] = [];
  for await (const e of readEntries(env.auditLogPath, { onFleetEvent: (f) => fleet.push(f) }))
    handoffs.push(e.statement.predicate);
  return { fleet, handoffs };
}

/** The most handoffs whose [startedAt, finishedAt] windows overlap at one instant. */
function peakOverlap(records: readonly HandoffRecord[]): number {
  const edges = records.flatMap((r) => [
    [Date.parse(r.startedAt), 1],
    [Date.parse(r.finishedAt), -1],
  ]);
  edges.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
  let now = 0;
  let peak = 0;
  for (const [, d] of edges) {
    now += d!;
    peak = Math.max(peak, now);
  }
  return peak;
}

/** Each cluster's own Git source and push-only Secret files (the template's are the first cluster's). */
const overrides = (of: readonly Cluster[], extra: Record<string, Record<string, unknown>> = {}) =>
  Object.fromEntries(
    of.map((c) => {
      const side = targets.find((t) => t.cluster === c)!.side;
      return [c.name, { ...targetOverrides(side), ...extra[c.name] }];
    }),
  );

/** The commit baton-controller last applied on `c`, from its GitSync's status. */
async function appliedRevision(c: Cluster): Promise<string | undefined> {
  const k = clientsFromKubeconfigFile(c.kubeconfigPath);
  const gs = await k.objects
    .read({
      apiVersion: 'baton.dev/v1alpha1',
      kind: 'GitSync',
      metadata: { name: 'baton-controller', namespace: 'baton-system' },
    })
    .catch(() => undefined);
  return (gs as { status?: { lastAppliedRevision?: string } } | undefined)?.status?.lastAppliedRevision;
}

beforeAll(async () => {
  targets = await startRealFleetTargets(8, `fleet-${process.pid}`);
  clusters = targets.map((t) => t.cluster);
  env = targets[0]!.side;
  template = writeFleetTemplate(env, 300);
});

afterAll(async () => {
  await stopRealFleetTargets(targets);
});

describe('baton fleet up, local engine, 8 real clusters', () => {
  it(
    'hands off 8 clusters, a canary then the rest 4 at a time, into one log that verifies',
    async () => {
      const f = writeFleetFile(file('all'), {
        template,
        clusters,
        waves: [{ count: 1 }, {}],
        concurrency: 4,
        failureBudget: 0,
        overrides: overrides(clusters),
      });
      const r = await fleetUp(['-f', f]);
      expect(r.code, r.stderr.slice(-3000)).toBe(0);
      expect(r.result.outcome).toBe('succeeded');
      expect(statuses(r.result)).toEqual([
        [[names()[0], 'handed-off']],
        names()
          .slice(1)
          .map((n) => [n, 'handed-off']),
      ]);

      const { fleet, handoffs } = await logEntries();
      expect(handoffs).toHaveLength(8);
      expect(handoffs.every((h) => h.outcome === 'handed-off' && h.actor.via === 'fleet')).toBe(true);
      expect(new Set(handoffs.map((h) => h.actor.fleetRunId))).toEqual(new Set([r.result.fleetRunId]));
      expect(fleet.map((e) => [e.index, e.statement.predicate.phase])).toEqual([
        [0, 'started'],
        [9, 'finished'],
      ]);
      expect(fleet[1]!.statement.predicate.outcome).toBe('succeeded');
      // Wave 2 started only after the canary had finished, and ran at most 4 at once (4 when it had 7 to do).
      const canary = handoffs.find((h) => h.cluster.name === names()[0])!;
      const rest = handoffs.filter((h) => h !== canary);
      expect(Math.min(...rest.map((h) => Date.parse(h.startedAt)))).toBeGreaterThanOrEqual(
        Date.parse(canary.finishedAt),
      );
      expect(peakOverlap(rest)).toBe(4);
      const v = await verifyLog(env.auditLogPath, await loadTrustedKeys(env.keysPath));
      expect(v.failures).toEqual([]);
      expect(v.entries).toBe(10);
      const logPath = /full log: (\S+)/.exec(r.stderr)?.[1];
      expect(logPath).toBeDefined();
      expect(r.stdout + r.stderr + readFileSync(logPath!, 'utf8')).not.toMatch(JWT_PATTERN);
      // Each cluster's step view row: steps with durations and facts, prefixed with the cluster.
      expect(r.stderr).toMatch(new RegExp(`\\[${names()[3]}\\] prove .* first 401 after`));
    },
    CASE_MS,
  );

  it(
    '--shard 0/3, 1/3 and 2/3 together cover every cluster exactly once',
    async () => {
      const since = Date.now();
      const seen: string[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await fleetUp(['-f', file('all'), '--shard', `${i}/3`]);
        expect(r.code, r.stderr.slice(-2000)).toBe(0);
        const mine = r.result.waves.flatMap((w) => w.clusters);
        // Already handed off: each shard only re-checks its slice.
        expect(mine.every((c) => c.status === 'already-handed-off')).toBe(true);
        seen.push(...mine.map((c) => c.name));
      }
      expect(seen.sort()).toEqual([...names()].sort());
      for (const c of clusters) expect(bootstrapMints(c.auditLogPath!, since)).toHaveLength(0);
    },
    CASE_MS,
  );

  it(
    'a cluster whose controller never takes over: budget 0 in the canary halts (exit 1); budget 1 finishes (exit 3)',
    async () => {
      const four = clusters.slice(0, 4);
      for (const c of four) await deleteNamespacesAndWait(c.kubeconfigPath, NAMESPACES);
      // Its controller's Pod never starts.
      await setSchedulable(four[0]!, false);
      const since = Date.now();
      const stuck = overrides(four, { [four[0]!.name]: { takeover: { timeoutSeconds: 10 } } });

      const halted = await fleetUp([
        '-f',
        writeFleetFile(file('halt'), {
          template,
          clusters: four,
          waves: [{ count: 1 }, {}],
          concurrency: 4,
          failureBudget: 0,
          overrides: stuck,
        }),
      ]);
      expect(halted.code, halted.stderr.slice(-2000)).toBe(1);
      expect(halted.result.outcome).toBe('halted');
      expect(halted.result.budget).toEqual({ allowed: 0, failed: 1 });
      expect(halted.result.waves[0]!.clusters[0]).toMatchObject({ status: 'failed', failedStep: 'takeover' });
      expect(halted.result.notStarted).toEqual(four.slice(1).map((c) => c.name));
      // Wave 2 never started: no credential was minted on its clusters.
      for (const c of four.slice(1)) expect(bootstrapMints(c.auditLogPath!, since)).toHaveLength(0);
      expect(halted.stdout).toContain('"failedStep": "takeover"');

      const partial = await fleetUp([
        '-f',
        writeFleetFile(file('partial'), {
          template,
          clusters: [four[1]!, four[0]!, four[2]!, four[3]!],
          waves: [{ count: 1 }, {}],
          concurrency: 4,
          failureBudget: 1,
          overrides: stuck,
        }),
      ]);
      expect(partial.code, partial.stderr.slice(-2000)).toBe(3);
      expect(partial.result.outcome).toBe('partial');
      expect(statuses(partial.result)).toEqual([
        [[four[1]!.name, 'handed-off']],
        [
          [four[0]!.name, 'failed'],
          [four[2]!.name, 'handed-off'],
          [four[3]!.name, 'handed-off'],
        ],
      ]);
      expect(partial.stderr).toContain('failed 1 of budget 1');
      // The failed cluster's credential was revoked and proven like any other.
      const failed = partial.result.waves[1]!.clusters[0]!.summary as HandoffSummary;
      expect(failed.proof?.probeStatus).toBe(401);
      await setSchedulable(four[0]!, true);
    },
    CASE_MS,
  );

  it(
    'kill -9 of the orchestrator mid-wave, then the same command: all handed off, one credential per cluster',
    async () => {
      const four = clusters.slice(4);
      for (const c of four) await deleteNamespacesAndWait(c.kubeconfigPath, NAMESPACES);
      const since = Date.now();
      // Wave 2's controllers are held back, so its handoffs are caught waiting in the takeover when the kill comes.
      for (const c of four.slice(1)) await setSchedulable(c, false);
      const f = writeFleetFile(file('kill'), {
        template,
        clusters: four,
        waves: [{ count: 1 }, {}],
        concurrency: 4,
        failureBudget: 0,
        overrides: overrides(four),
      });
      const child = spawnFleetUp(['-f', f]);
      let stderr = '';
      child.stderr.on('data', (d) => {
        stderr += d;
      });
      const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_c, s) => resolve(s)));
      const lastStep = (name: string) =>
        new Journal(env.loaded.plan.journalDir, name)
          .entries()
          .filter((e) => Date.parse(e.at) >= since)
          .at(-1)?.step;
      await eventually(
        async () => {
          if (child.exitCode !== null) throw new Error(`baton fleet up exited early:\n${stderr.slice(-3000)}`);
          return four.slice(1).every((c) => lastStep(c.name) === 'takeover');
        },
        600_000,
        'wave 2 waiting in the takeover',
        200,
      );
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');

      // The controllers take over what was pushed; the rerun must finish those handoffs without minting again. Taken
      // over as the rerun checks it: at the revision and Available (a controller that has applied the commit but is
      // not Ready yet is not taken over, and the rerun then rightly hands off anew, with a second credential).
      for (const c of four.slice(1)) await setSchedulable(c, true);
      await eventually(
        async () => {
          for (const c of four.slice(1)) {
            const side = targets.find((t) => t.cluster === c)!.side;
            if ((await appliedRevision(c)) !== side.revision) return false;
            const k = clientsFromKubeconfigFile(c.kubeconfigPath);
            if (!(await deploymentState(k, 'baton-system', 'baton-controller')).isAvailable) return false;
          }
          return true;
        },
        120_000,
        'wave 2 controllers reconciled',
        500,
      );
      const again = await fleetUp(['-f', f]);
      expect(again.code, again.stderr.slice(-3000)).toBe(0);
      expect(statuses(again.result)).toEqual([
        [[four[0]!.name, 'already-handed-off']],
        four.slice(1).map((c) => [c.name, 'handed-off']),
      ]);
      for (const c of again.result.waves[1]!.clusters) expect((c.summary as HandoffSummary).resumed).toBeDefined();
      for (const c of four) expect(bootstrapMints(c.auditLogPath!, since), c.name).toHaveLength(1);
      const v = await verifyLog(env.auditLogPath, await loadTrustedKeys(env.keysPath));
      expect(v.failures).toEqual([]);
    },
    CASE_MS,
  );
});
