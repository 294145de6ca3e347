import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CLI } from '../../support/handoff-run.js';
import { adminClients } from '../../support/kube.js';

const run = promisify(execFile);
const baton = (args: string[]) =>
  run(process.execPath, [CLI, ...args], {
    timeout: 120_000,
  });

describe('baton testenv (as a user runs it)', () => {
  it('up --json prints a working kubeconfig; ls shows the cluster; down stops it', async () => {
    const name = `cli-${process.pid}`;
    const { stdout } = await baton(['testenv', 'up', '--name', name, '--nodes', '1', '--json']);
    const out = JSON.parse(stdout) as { name: string; server: string; kubeconfigPath: string; auditLogPath: string };
    try {
      expect(Object.keys(out).sort()).toEqual(['auditLogPath', 'kubeconfigPath', 'name', 'server']);
      expect(out.name).toBe(name);
      const nodes = await adminClients(out.kubeconfigPath).core.listNode();
      expect(nodes.items.map((n) => n.metadata?.name)).toEqual([`${name}-node-0`]);
      const ls = JSON.parse((await baton(['testenv', 'ls', '-o', 'json'])).stdout) as {
        name: string;
        status: string;
      }[];
      expect(ls.find((c) => c.name === name)?.status).toBe('running');
    } finally {
      await baton(['testenv', 'down', '--name', name]);
    }
    const ls = JSON.parse((await baton(['testenv', 'ls', '-o', 'json'])).stdout) as { name: string }[];
    expect(ls.some((c) => c.name === name)).toBe(false);
  });

  it('up --keep: down stops the cluster and leaves its data directory, audit log included', async () => {
    const name = `keep-${process.pid}`;
    const { stdout } = await baton(['testenv', 'up', '--name', name, '--node', 'kwok', '--keep', '--json']);
    const out = JSON.parse(stdout) as { kubeconfigPath: string; auditLogPath: string };
    const dir = dirname(out.kubeconfigPath);
    try {
      await adminClients(out.kubeconfigPath).core.listNamespace();
      await baton(['testenv', 'down', '--name', name]);
      expect(readFileSync(out.auditLogPath, 'utf8')).toContain('"verb":"list"');
      const ls = JSON.parse((await baton(['testenv', 'ls', '-o', 'json'])).stdout) as {
        name: string;
        status: string;
      }[];
      expect(ls.find((c) => c.name === name)?.status).toBe('stopped');
    } finally {
      await baton(['testenv', 'down', '--name', name]).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rejects a bad name with exit code 2 and a message that says the rule', async () => {
    const err = await baton(['testenv', 'up', '--name', 'Bad_Name']).catch((e: { code: number; stderr: string }) => e);
    expect((err as { code: number }).code).toBe(2);
    expect((err as { stderr: string }).stderr).toMatch(
      /cluster name "Bad_Name" is invalid: use 1-40 lowercase letters/,
    );
  });

  it('down without --name or --all is a usage error', async () => {
    const err = await baton(['testenv', 'down']).catch((e: { code: number; stderr: string }) => e);
    expect((err as { code: number }).code).toBe(2);
    expect((err as { stderr: string }).stderr).toMatch(/needs --name <name> or --all/);
  });
});
