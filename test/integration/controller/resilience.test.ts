import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunningController } from '@baton/controller';
import {
  CLUSTER_PATH,
  type ControllerEnv,
  callWebhook,
  configMapYaml,
  gitSyncStatus,
  mintToken,
  NS,
  pushAsBootstrap,
  putSecret,
  startControllerEnv,
  WEBHOOK_SECRET,
  writeTokenKubeconfig,
} from '@baton/testbed';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { eventually } from '../../support/kube.js';
import { capturedLogger, condition, sourceRepoFiles, startTestController } from './harness.js';

// Failure modes and availability: a wrong pull credential, two replicas with a Lease, and the
// real entry point (main.ts) as a separate process that stops cleanly on SIGTERM.
let env: ControllerEnv;
let token: string;
const running: RunningController[] = [];
const children: ChildProcess[] = [];
let tmp: string;
const REPO_ROOT = new URL('../../../', import.meta.url).pathname;

async function leaseHolder() {
  const lease = await env.admin.get<{ spec?: { holderIdentity?: string | null } }>(
    `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/baton-controller`,
  );
  return lease?.spec?.holderIdentity ?? undefined;
}

async function commitAndNotify(greeting: string, url?: string) {
  const sha = await env.git.commitFiles(
    env.repo,
    { [`${CLUSTER_PATH}/apps/settings.yaml`]: configMapYaml('demo', 'settings', { greeting }) },
    greeting,
  );
  if (url) await callWebhook(url);
  return sha;
}

beforeAll(async () => {
  env = await startControllerEnv();
  tmp = await mkdtemp(join(tmpdir(), 'baton-resilience-'));
  const files = await sourceRepoFiles(env.git.repoUrl(env.repo));
  await env.git.commitFiles(env.repo, files, 'initial');
  await pushAsBootstrap(
    env.admin,
    Object.fromEntries(Object.entries(files).filter(([p]) => p.includes('/baton-controller/'))),
  );
  await putSecret(env.admin, NS, 'baton-webhook', { secret: WEBHOOK_SECRET });
  token = await mintToken(env.admin, NS, 'baton-controller');
});

afterAll(async () => {
  await Promise.allSettled(running.map((c) => c.stop()));
  for (const c of children) if (c.exitCode === null && c.pid) process.kill(-c.pid, 'SIGKILL');
  await env?.stop();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('baton-controller failure modes and availability', () => {
  it('a wrong pull credential gives Stalled=AuthenticationFailed, backs off instead of looping, and recovers when fixed', async () => {
    await putSecret(env.admin, NS, 'baton-pull-credential', {
      username: env.git.credentials.username,
      password: 'not-the-password',
    });
    const logs = capturedLogger();
    const c = await startTestController(env, token, logs.log, 'replica-auth');
    running.push(c);
    await eventually(
      async () => condition(await gitSyncStatus(env.admin), 'Stalled')?.status === 'True',
      30_000,
      'Stalled=True',
    );
    const status = await gitSyncStatus(env.admin);
    expect(condition(status, 'Stalled')?.reason).toBe('AuthenticationFailed');
    expect(condition(status, 'Ready')).toMatchObject({ status: 'False', reason: 'AuthenticationFailed' });
    expect(condition(status, 'Ready')?.message).toContain('pull-credential Secret');
    expect(condition(status, 'Ready')?.message).toContain(env.git.repoUrl(env.repo));
    // Backoff 1 s, 2 s, 4 s (retryBaseMs 1 s), never a hot loop: waits for four failed syncs, then checks each gap
    // between them against its backoff (a gap is the wait plus the next sync, so never shorter).
    const failedAt = () =>
      logLines(logs.text())
        .filter((l) => l.msg === 'sync failed')
        .map((l) => Date.parse(String(l.time)));
    await eventually(async () => failedAt().length >= 4, 30_000, 'four failed syncs');
    const times = failedAt().slice(0, 4);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    // 25 ms of slack for the timer's and the log's clocks.
    expect(gaps.map((gap, i) => gap >= 1_000 * 2 ** i - 25)).toEqual([true, true, true]);
    expect(gaps[2]).toBeLessThan(8_000);
    expect(await fetchMetric(c.url, 'baton_controller_syncs_total{result="failure"}')).toBeGreaterThanOrEqual(4);
    expect((await fetch(`${c.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${c.url}/readyz`)).status).toBe(503);
    expect(logs.text().includes('not-the-password')).toBe(false);

    await putSecret(env.admin, NS, 'baton-pull-credential', {
      username: env.git.credentials.username,
      password: env.git.credentials.password,
    });
    const sha = await commitAndNotify('recovered', c.url);
    await eventually(
      async () => (await gitSyncStatus(env.admin))?.lastAppliedRevision === sha,
      20_000,
      'recovery after the Secret is fixed',
    );
    expect(condition(await gitSyncStatus(env.admin), 'Stalled')?.status).toBe('False');
    await c.stop();
    running.pop();
    expect(await leaseHolder()).toBeUndefined();
  });

  it('two replicas: only the leader applies, and the other takes over when the leader stops', async () => {
    const a = await startTestController(env, token, capturedLogger().log, 'replica-a');
    const b = await startTestController(env, token, capturedLogger().log, 'replica-b');
    running.push(a, b);
    await eventually(
      async () => a.isLeader !== b.isLeader && (await leaseHolder()) !== undefined,
      20_000,
      'exactly one leader',
    );
    const [leader, standby] = a.isLeader ? [a, b] : [b, a];
    expect(await leaseHolder()).toBe(leader === a ? 'replica-a' : 'replica-b');
    const sha1 = await commitAndNotify('leader applies', leader.url);
    await eventually(
      async () => (await gitSyncStatus(env.admin))?.lastAppliedRevision === sha1,
      20_000,
      'the leader to apply',
    );
    expect(standby.lastSync).toBeUndefined();
    expect(await fetchMetric(standby.url, 'baton_controller_objects_applied_total')).toBe(0);
    expect(await callWebhook(standby.url)).toBe(503);
    // A standby reports ready once it has seen the leader's Lease, so a 2-replica Deployment is Available.
    await eventually(async () => (await fetch(`${standby.url}/readyz`)).status === 200, 5_000, 'the standby ready');

    await leader.stop();
    await eventually(async () => standby.isLeader, 15_000, 'the standby to take over');
    const sha2 = await commitAndNotify('standby took over', standby.url);
    await eventually(
      async () => (await gitSyncStatus(env.admin))?.lastAppliedRevision === sha2,
      20_000,
      'the new leader to apply',
    );
    // The status is written before the sync returns its outcome: wait for the outcome, don't race it.
    await eventually(async () => standby.lastSync?.revision === sha2, 10_000, 'the new leader to report the sync');
    await standby.stop();
  });

  it('main.ts runs as its own process with a token file and stops cleanly on SIGTERM', async () => {
    const p = await startControllerProcess('process-1');
    const { child, exited, url } = p;
    const sha = await commitAndNotify('from the process');
    await callWebhook(url);
    await eventually(
      async () => (await gitSyncStatus(env.admin))?.lastAppliedRevision === sha,
      30_000,
      'the process to apply',
    );
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    process.kill(child.pid!, 'SIGTERM');
    const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('timeout'), 10_000))]);
    expect(code).toBe(0);
    expect(await leaseHolder()).toBeUndefined();
    const out = p.output();
    const lines = logLines(out);
    expect(lines.some((l) => l.msg === 'sync succeeded' && l.revision === sha && typeof l.syncId === 'string')).toBe(
      true,
    );
    expect(lines.at(-1)?.msg).toBe('stopped');
    expect(out.includes(token)).toBe(false);
    expect(out.includes(env.git.credentials.password)).toBe(false);
  });

  it('a leader stalled by SIGSTOP mid-apply is replaced; on SIGCONT it steps down and writes nothing', async ({
    annotate,
  }) => {
    await putSecret(env.admin, NS, 'baton-pull-credential', {
      username: env.git.credentials.username,
      password: env.git.credentials.password,
    });
    const a = await startControllerProcess('process-a');
    await eventually(async () => (await leaseHolder()) === 'process-a', 30_000, 'process-a to lead');
    const b = await startControllerProcess('process-b');
    await eventually(async () => (await fetch(`${b.url}/readyz`)).status === 200, 30_000, 'process-b ready as standby');
    const agentA = 'baton-controller (process-a)';
    const isWriteByA = (e: ApiAuditEvent) => e.userAgent === agentA && WRITE_VERBS.has(e.verb);

    // A revision large enough that process-a is still applying it when it is stopped.
    const bulk = [
      stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bulk' } }),
      ...Array.from({ length: 300 }, (_, i) => configMapYaml('bulk', `item-${i}`, { i: String(i) })),
    ].join('---\n');
    const sha = await env.git.commitFiles(env.repo, { [`${CLUSTER_PATH}/apps/bulk.yaml`]: bulk }, 'bulk');
    let next = (await stat(env.cluster.auditLogPath!)).size;
    expect(await callWebhook(a.url)).toBe(202);
    await eventually(
      async () => {
        const r = await readAudit(next);
        next = r.next;
        return r.events.some((e) => isWriteByA(e) && e.objectRef?.namespace === 'bulk');
      },
      60_000,
      'process-a to start applying the bulk revision',
      10,
    );
    process.kill(a.child.pid!, 'SIGSTOP');
    const failoverMs = await eventually(
      async () => (await leaseHolder()) === 'process-b',
      60_000,
      'process-b to take the Lease of the stalled leader',
      100,
    );
    await eventually(
      async () => (await gitSyncStatus(env.admin))?.lastAppliedRevision === sha,
      90_000,
      'process-b to apply the revision',
    );

    const resumedMs = Date.now();
    const seen = a.output().length;
    process.kill(a.child.pid!, 'SIGCONT');
    const afterResume = () => logLines(a.output().slice(seen));
    await eventually(
      async () => afterResume().some((l) => l.msg === 'lost leadership'),
      30_000,
      'process-a to step down',
    );
    // Evidence that it has run on after resuming: two Lease reads of its own, i.e. at least one retry period.
    await eventually(
      async () =>
        (await readAudit(0)).events.filter(
          (e) =>
            e.userAgent === agentA &&
            e.verb === 'get' &&
            e.objectRef?.resource === 'leases' &&
            Date.parse(e.requestReceivedTimestamp) >= resumedMs,
        ).length >= 2,
      30_000,
      'process-a to keep electing as a standby',
    );
    const writesAfterResume = (await readAudit(0)).events.filter(
      (e) => isWriteByA(e) && Date.parse(e.requestReceivedTimestamp) >= resumedMs,
    );
    expect(writesAfterResume.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
    expect(afterResume().some((l) => l.msg === 'sync succeeded')).toBe(false);
    expect(await leaseHolder()).toBe('process-b');
    expect(await fetchMetric(a.url, 'baton_controller_leader')).toBe(0);
    expect((await fetch(`${a.url}/readyz`)).status).toBe(200);
    await annotate(
      `failover after SIGSTOP of the leader: ${Math.round(failoverMs)} ms (lease 15 s, renew deadline 10 s, retry 2 s)`,
    );

    for (const p of [a, b]) process.kill(p.child.pid!, 'SIGTERM');
    expect(await Promise.all([a.exited, b.exited])).toEqual([0, 0]);
  });
});

/** Starts `main.ts` as its own process (own process group) and waits until it logs its URL. */
async function startControllerProcess(identity: string) {
  // Replicas an earlier test left running would hold the Lease.
  await Promise.allSettled(running.splice(0).map((c) => c.stop()));
  const child = spawn(
    process.execPath,
    [
      '--conditions=@baton/source',
      '--import',
      'tsx',
      'packages/controller/src/main.ts',
      '--kubeconfig',
      await writeTokenKubeconfig(tmp, env.cluster, token),
      '--port',
      '0',
      '--identity',
      identity,
      '--work-dir',
      join(tmp, `work-${identity}`),
    ],
    { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  children.push(child);
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  await eventually(async () => /"url":"http:\/\/[^"]+"/.test(out), 60_000, `${identity} to log its URL`);
  const url = (/"url":"(http:\/\/[^"]+)"/.exec(out)?.[1] ?? '').replace('0.0.0.0', '127.0.0.1');
  return { child, exited, url, output: () => out };
}

function logLines(out: string): Record<string, unknown>[] {
  return out
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** apiserver audit events (Metadata level, one JSON line each). */
interface ApiAuditEvent {
  verb: string;
  userAgent?: string;
  requestReceivedTimestamp: string;
  requestURI: string;
  objectRef?: { resource?: string; namespace?: string; name?: string };
}

/** Reads the apiserver audit log from byte `from`; returns the events and where to read next. */
async function readAudit(from: number): Promise<{ events: ApiAuditEvent[]; next: number }> {
  const { open } = await import('node:fs/promises');
  const fh = await open(env.cluster.auditLogPath!, 'r');
  try {
    const { size } = await fh.stat();
    const buf = Buffer.alloc(Math.max(0, size - from));
    await fh.read(buf, 0, buf.length, from);
    const text = buf.toString('utf8');
    const end = text.lastIndexOf('\n') + 1;
    const events = text
      .slice(0, end)
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as ApiAuditEvent);
    return { events, next: from + Buffer.byteLength(text.slice(0, end)) };
  } finally {
    await fh.close();
  }
}

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

async function fetchMetric(url: string, name: string): Promise<number | undefined> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : undefined;
}
