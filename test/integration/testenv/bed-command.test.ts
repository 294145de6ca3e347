// `baton testenv up --bed` as a person uses it to follow a handoff by hand: a cluster with its real node, Git server
// and a ready plan stay up after the command returns; the CLI alone hands it off; `down` stops all of it.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import type { HandoffSummary } from '@baton/core';
import type { DetachedBed } from '@baton/testenv';
import { describe, expect, it } from 'vitest';
import { CLI } from '../../support/handoff-run.js';

const run = promisify(execFile);
const baton = (args: string[], timeout = 240_000) =>
  run(process.execPath, [CLI, ...args], {
    timeout,
    maxBuffer: 16 * 1024 * 1024,
  });

interface UpOut {
  readonly name: string;
  readonly kubeconfigPath: string;
  readonly bed: DetachedBed;
}

/** Whether something answers HTTP at `url` (the bed's Git server). */
const answers = (url: string) =>
  fetch(url, { signal: AbortSignal.timeout(3_000) }).then(
    () => true,
    () => false,
  );

describe('baton testenv up --bed (a handoff to follow by hand)', () => {
  it('keeps a baton-controller bed running after it returns; baton up hands it off; down stops all of it', async () => {
    const name = `bedcli-${process.pid}`;
    const { stdout } = await baton(['testenv', 'up', '--name', name, '--bed', 'baton-controller', '--json']);
    const out = JSON.parse(stdout) as UpOut;
    const b = out.bed;
    try {
      expect(b.profile).toBe('baton-controller');
      expect(b.controllerImage).toMatch(/@sha256:[0-9a-f]{64}$/);
      for (const path of [b.planPath, b.pushDir, b.pullCredentialPath, b.signingKeyPath, b.keysPath])
        expect(existsSync(path), path).toBe(true);
      expect(readFileSync(b.planPath, 'utf8')).toContain(b.revision);
      // The bed outlived the command that started it: its Git server still serves the repository.
      expect(await answers(`${b.gitUrl}/info/refs?service=git-upload-pack`)).toBe(true);

      const up = await baton(['up', '--plan', b.planPath, '-o', 'json']);
      const summary = JSON.parse(up.stdout) as HandoffSummary;
      expect(summary.outcome).toBe('handed-off');
      expect(summary.revision).toBe(b.revision);
      const status = JSON.parse((await baton(['status', '--plan', b.planPath, '-o', 'json'])).stdout) as {
        outcome: string;
      };
      expect(status.outcome).toBe('handed-off');
      await baton(['audit', 'verify', b.auditLogPath, '--keys', b.keysPath]);
    } finally {
      await baton(['testenv', 'down', '--name', name]);
    }
    expect(await answers(`${b.gitUrl}/info/refs?service=git-upload-pack`)).toBe(false);
    expect(existsSync(b.dir)).toBe(false);
    const ls = JSON.parse((await baton(['testenv', 'ls', '-o', 'json'])).stdout) as { name: string }[];
    expect(ls.some((c) => c.name === name)).toBe(false);
  });

  it('refuses --manifests that is not a profile, naming the flag and the fix, and starts nothing', async () => {
    const name = `bedbad-${process.pid}`;
    const err = await baton(['testenv', 'up', '--name', name, '--bed', 'flux', '--manifests', 'docs']).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect((err as { code: number }).code).toBe(2);
    expect((err as { stderr: string }).stderr).toMatch(
      /--manifests .*docs is not a flux profile \(it has no rules\/profile\.yaml\)/,
    );
    const ls = JSON.parse((await baton(['testenv', 'ls', '-o', 'json'])).stdout) as { name: string }[];
    expect(ls.some((c) => c.name === name)).toBe(false);
  });

  it('refuses a bed on a kwok node (nothing would start its controller), naming the flag and the fix', async () => {
    const name = `bedkwok-${process.pid}`;
    const err = await baton(['testenv', 'up', '--name', name, '--bed', 'baton-controller', '--node', 'kwok']).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect((err as { code: number }).code).toBe(2);
    expect((err as { stderr: string }).stderr).toMatch(
      /--bed baton-controller needs a real node \(its controller runs as a Pod that kubelet starts\): drop --node kwok/,
    );
    const ls = JSON.parse((await baton(['testenv', 'ls', '-o', 'json'])).stdout) as { name: string }[];
    expect(ls.some((c) => c.name === name)).toBe(false);
  });
});
