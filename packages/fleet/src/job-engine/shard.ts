import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { HandoffRecord } from '@baton/audit';
import {
  type AuditAppendResult,
  type AuditSink,
  type Clock,
  type HandoffDeps,
  type HandoffSummary,
  type Logger,
  parseHandoffPlan,
  runHandoff,
} from '@baton/core';
import { ConfigError, isBatonError } from '@baton/errors';
import { type KubeClients, kubeCall } from '@baton/kube';
import { targetClients } from '../local-engine.js';
import type { ShardTarget } from './run-jobs.js';
import { mergeJournal, TargetJournal } from './target-journal.js';
import { FLEET_RUN_LABEL, SHARD_CONFIG_ERROR_EXIT } from './wave-job.js';

/** Options of {@link runShard}. */
export interface ShardOptions {
  /** The management cluster (the pod's own identity). */
  readonly management: KubeClients;
  readonly namespace: string;
  /** The wave's ConfigMap. */
  readonly waveConfig: string;
  /** JOB_COMPLETION_INDEX. */
  readonly index: number;
  readonly clock: Clock;
  readonly log: Logger;
  /** Core's collaborators other than operator, audit, clock, log and onStep (actor, run ids, pid check, revision). */
  readonly deps: Omit<HandoffDeps, 'operator' | 'audit' | 'clock' | 'log' | 'onStep'>;
  /** How long to wait for the orchestrator to append this shard's record. @default 300000 */
  readonly recordTimeoutMs?: number;
  /** How often the local journal is copied to the management cluster between steps. @default 250 */
  readonly syncIntervalMs?: number;
  /** Called as each step starts, once its journal entry is on the management cluster (tests hold a shard there). */
  readonly onStep?: (step: string, cluster: string) => void | Promise<void>;
}

/**
 * Pod i of a wave's Job: hands off target i with core's runHandoff. The cluster's journal lives on the management
 * cluster: it is copied into a local journal before the run (so a replacement pod resumes what a killed one left)
 * and copied back at every step, every `syncIntervalMs` and at the end, by compare-and-set. The record is signed and
 * appended by the orchestrator (the shard has no signing key). Returns the exit code: 0 handed off, 1 failed,
 * {@link SHARD_CONFIG_ERROR_EXIT} for a configuration error (the Job's podFailurePolicy then fails the whole Job).
 */
export async function runShard(o: ShardOptions): Promise<number> {
  let target: ShardTarget | undefined;
  try {
    target = await readTarget(o);
  } catch (err) {
    o.log.error({ err: (err as Error).message }, 'shard cannot read its target');
    return isBatonError(err) && err.code === 'config' ? SHARD_CONFIG_ERROR_EXIT : 1;
  }
  const journal = new TargetJournal(o.management, o.namespace, target.cluster);
  const dir = mkdtempSync(join(tmpdir(), 'baton-shard-'));
  const localJournal = join(dir, `${target.cluster}.jsonl`);
  try {
    const { data } = await journal.read();
    writeFileSync(localJournal, data.journal ?? '', { mode: 0o600 });
    const loaded = parseHandoffPlan({ ...(target.plan as object), journalDir: dir }, target.file);
    const operator = await targetClients(
      { name: target.cluster, kubeconfig: { kind: 'secret', ...target.secretRef } },
      { operatorKubeconfig: '', management: o.management },
    );
    let synced = data.journal ?? '';
    const sync = async () => {
      const text = readFileSync(localJournal, 'utf8');
      if (text === synced) return;
      await journal.update((d) => ({ ...d, journal: mergeJournal(d.journal, text) }));
      synced = text;
    };
    const timer = setInterval(() => void sync().catch(() => {}), o.syncIntervalMs ?? 250);
    let summary: HandoffSummary;
    try {
      summary = await runHandoff(loaded, {
        ...o.deps,
        isLockHolderGone: (holder) => shardPodGone(o.management, o.namespace, holder.host),
        operator,
        clock: o.clock,
        log: o.log,
        audit: remoteSink(journal, o.clock, o.recordTimeoutMs ?? 300_000),
        onStep: async (step) => {
          await sync();
          await o.onStep?.(step, target.cluster);
        },
      });
    } finally {
      clearInterval(timer);
      await sync();
    }
    await journal.update((d) => ({ ...d, summary: JSON.stringify(summary) }));
    const ok = summary.outcome === 'handed-off' || (summary.outcome === 'already-handed-off' && !summary.error);
    o.log.info({ cluster: target.cluster, outcome: summary.outcome }, 'shard finished');
    return ok ? 0 : 1;
  } catch (err) {
    o.log.error({ cluster: target.cluster, err: (err as Error).message }, 'shard failed');
    await journal
      .update((d) => ({
        ...d,
        summary: JSON.stringify({ outcome: 'failed', error: (err as Error).message.slice(0, 500) }),
      }))
      .catch(() => {});
    return err instanceof ConfigError ? SHARD_CONFIG_ERROR_EXIT : 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Whether a lock holder (`host`: its pod's name, POD_NAME) is a shard pod of this namespace that has terminated: a
 * pod the Job replaced (killed, evicted, its node lost) cannot release the target's lock, and its replacement has a
 * new name, so the pid check that frees a lock on one host cannot apply. Anything else (another host, a pod still running, a pod already
 * deleted) is not known gone: the lock then waits for its expiry.
 */
export async function shardPodGone(management: KubeClients, namespace: string, host: string): Promise<boolean> {
  try {
    const pod = await management.core.readNamespacedPod({ namespace, name: host });
    const phase = pod.status?.phase;
    return pod.metadata?.labels?.[FLEET_RUN_LABEL] !== undefined && (phase === 'Failed' || phase === 'Succeeded');
  } catch {
    return false;
  }
}

async function readTarget(o: ShardOptions): Promise<ShardTarget> {
  const cm = await kubeCall(`read ConfigMap ${o.namespace}/${o.waveConfig} (the wave's targets)`, () =>
    o.management.core.readNamespacedConfigMap({ namespace: o.namespace, name: o.waveConfig }),
  );
  const targets = JSON.parse(cm.data?.['targets.json'] ?? '[]') as ShardTarget[];
  const t = targets[o.index];
  if (!t)
    throw new ConfigError(
      `JOB_COMPLETION_INDEX ${o.index} names no target: ConfigMap ${o.namespace}/${o.waveConfig} lists ${targets.length}`,
    );
  return t;
}

/** An AuditSink that asks the orchestrator to sign and append, through the target's journal, and waits for it. */
function remoteSink(journal: TargetJournal, clock: Clock, timeoutMs: number): AuditSink {
  return {
    // The orchestrator signs, and checked its signer before it started any Job.
    check: async () => undefined,
    async append(record: HandoffRecord): Promise<AuditAppendResult> {
      await journal.update((d) => ({ ...d, pendingRecord: JSON.stringify(record) }));
      const t0 = clock.monotonicMs();
      for (;;) {
        const { data } = await journal.read();
        const a = data.appended ? (JSON.parse(data.appended) as { runId?: string; error?: string }) : undefined;
        if (a?.runId === record.runId) return a as unknown as AuditAppendResult;
        if (a?.error && !data.pendingRecord) throw new ConfigError(`the orchestrator refused the record: ${a.error}`);
        if (clock.monotonicMs() - t0 > timeoutMs)
          throw new ConfigError(
            `no orchestrator appended this shard's record within ${Math.round(timeoutMs / 1000)} s; is baton fleet up still running?`,
          );
        await clock.sleep(500);
      }
    },
  };
}
