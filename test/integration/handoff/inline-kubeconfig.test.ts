import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type HandoffSummary, parseHandoffPlan, runHandoff } from '@baton/core';
import { clientsFromKubeconfigContent } from '@baton/kube';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { useHandoffCluster } from '../../support/handoff-cluster.js';
import { CLI, JWT_PATTERN, testHandoffDeps } from '../../support/handoff-run.js';

// A caller such as a Pulumi program holds the kubeconfig in memory: the plan carries its text, no file path.

const execFileAsync = promisify(execFile);
const baton = (args: string[]) =>
  execFileAsync(process.execPath, [CLI, ...args]).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );

const h = useHandoffCluster();
let kubeconfigText = '';
/** What must never be shown: the client key, base64 as in the kubeconfig and each line of its PEM body. */
let secrets: string[] = [];

/** The env's plan as a plain object, with the kubeconfig text in place of its path. */
function inlinePlan(content: string, context?: string): Record<string, Record<string, unknown>> {
  const plan = parse(readFileSync(h.env.planPath, 'utf8'), { version: '1.1' }) as Record<
    string,
    Record<string, unknown>
  >;
  const { kubeconfig: _path, ...cluster } = plan.cluster ?? {};
  plan.cluster = { ...cluster, kubeconfigContent: content, ...(context ? { context } : {}) };
  return plan;
}

function expectNoSecret(text: string): void {
  for (const s of secrets) expect(text).not.toContain(s);
  expect(text).not.toMatch(JWT_PATTERN);
}

beforeAll(() => {
  kubeconfigText = readFileSync(h.cluster.kubeconfigPath, 'utf8');
  const kc = parse(kubeconfigText) as { users: { user: Record<string, string> }[] };
  const keyData = kc.users[0]?.user['client-key-data'] ?? '';
  const keyPem = Buffer.from(keyData, 'base64').toString('utf8');
  secrets = [keyData, ...keyPem.split('\n').filter((l) => l.length >= 40 && !l.startsWith('-----'))];
  expect(secrets.length).toBeGreaterThan(1);
});

describe('a plan that carries the kubeconfig text instead of a path', () => {
  it('hands off in-process (JSON text, as a Pulumi output) and shows the client key nowhere', async () => {
    const { cluster, env } = h;
    const json = JSON.stringify(parse(kubeconfigText));
    const loaded = parseHandoffPlan(inlinePlan(json), '<pulumi>', env.dir);
    expect(loaded.plan.cluster.kubeconfig).toBeUndefined();
    const { deps, captured } = testHandoffDeps(loaded, cluster.kubeconfigPath, {
      operator: clientsFromKubeconfigContent(json),
    });
    const s = await runHandoff(loaded, deps);
    expect(s.outcome, s.error).toBe('handed-off');
    expect(s.proof?.tokenReviewAuthenticated).toBe(false);
    expectNoSecret(captured.text() + JSON.stringify(s) + readFileSync(env.auditLogPath, 'utf8'));
  });

  it('baton up reads it from the plan file (YAML text), with no kubeconfig anywhere else', async () => {
    const { cluster, env } = h;
    const planPath = join(env.dir, 'inline-plan.yaml');
    writeFileSync(planPath, stringify(inlinePlan(kubeconfigText), { version: '1.1' }));
    const { KUBECONFIG: _k, ...noKubeconfigEnv } = process.env;
    const r = await execFileAsync(process.execPath, [CLI, 'up', '--plan', planPath, '-o', 'json', '--verbose'], {
      env: { ...noKubeconfigEnv, HOME: env.dir },
    });
    const s = JSON.parse(r.stdout) as HandoffSummary;
    expect(s.outcome, s.error).toBe('already-handed-off');
    expect(s.error).toBeUndefined();
    expect(s.cluster.server).toBe(cluster.server);
    expectNoSecret(r.stdout + r.stderr);
  });

  it('refuses a broken text or an unknown context without quoting the text', async () => {
    const { env } = h;
    const broken = kubeconfigText.replace(/(client-key-data: \S+)/, '$1\n    oops: [unclosed');
    const brokenPath = join(env.dir, 'broken-plan.yaml');
    writeFileSync(brokenPath, stringify(inlinePlan(broken), { version: '1.1' }));
    const bad = await baton(['up', '--plan', brokenPath, '-o', 'json']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('the inline kubeconfig (cluster.kubeconfigContent) is not a valid kubeconfig');
    expectNoSecret(bad.stdout + bad.stderr);

    const ctxPath = join(env.dir, 'context-plan.yaml');
    writeFileSync(ctxPath, stringify(inlinePlan(kubeconfigText, 'nope'), { version: '1.1' }));
    const ctx = await baton(['up', '--plan', ctxPath, '-o', 'json']);
    expect(ctx.code).toBe(2);
    expect(ctx.stderr).toContain('the inline kubeconfig has no context "nope"');
    expectNoSecret(ctx.stdout + ctx.stderr);
  });
});
