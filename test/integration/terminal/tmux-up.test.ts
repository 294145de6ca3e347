import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { HandoffBed } from '@baton/testenv/beds';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoBed } from '../../../scripts/demo/bed.js';
import { CLI, JWT_PATTERN } from '../../support/handoff-run.js';

// What a person sees: `baton up` in a real terminal (Debian's tmux, an 80-column pane), read back with capture-pane.
// The live step view redraws in place; once it ends, the screen holds the steps and a summary with no wrapped line,
// then `baton status` and `baton audit ls` as a person types them next.
const execFileAsync = promisify(execFile);
const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const SOCKET = `baton-test-${process.pid}`;
const SESSION = 'up';
const WIDTH = 80;

const tmux = (args: readonly string[]) => execFileAsync('tmux', ['-L', SOCKET, ...args], { cwd: REPO });

/** The pane's whole history: wrapped lines joined (-J), so a line wider than the pane shows as one long line. */
async function screen(): Promise<string> {
  return (await tmux(['capture-pane', '-p', '-J', '-S', '-', '-t', SESSION])).stdout;
}

let bed: HandoffBed;

beforeAll(async () => {
  bed = await startDemoBed({ name: `tmux-${process.pid}` });
}, 600_000);

afterAll(async () => {
  await tmux(['kill-server']).catch(() => undefined);
  await bed?.stop();
});

describe('baton up in an 80-column terminal', () => {
  it('shows the steps as they run, then a summary that fits the screen', async () => {
    const baton = (...args: string[]) => [process.execPath, CLI, ...args].join(' ');
    // baton up, then what a person types next: the receipt the cluster carries and the audit log's listing.
    const command = [
      `${baton('up', '--plan', bed.side.planPath)}; echo "baton exited $?"`,
      `${baton('status', '--kubeconfig', bed.kubeconfigPath)}; echo "status exited $?"`,
      `${baton('audit', 'ls', bed.side.auditLogPath)}; echo "audit ls exited $?"`,
    ].join('; ');
    // The pane keeps the command's screen after it exits (remain-on-exit), with its exit status.
    await tmux([
      'new-session',
      '-d',
      '-s',
      SESSION,
      '-x',
      String(WIDTH),
      '-y',
      '50',
      '-c',
      REPO,
      `${command}; sleep 600`,
    ]);
    let text = '';
    const deadline = Date.now() + 300_000;
    while (Date.now() < deadline) {
      text = await screen();
      if (/audit ls exited \d+/.test(text)) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    process.stderr.write(`--- the pane ---\n${text}\n---\n`);
    // Kept for the README's captures of up, status and audit ls.
    mkdirSync(join(REPO, 'test-results'), { recursive: true });
    writeFileSync(join(REPO, 'test-results', 'tmux-up.txt'), text);
    expect(text).toMatch(/baton exited 0/);
    expect(text).toMatch(/status exited 0/);
    expect(text).toMatch(/audit ls exited 0/);
    const lines = text.replace(/\s+$/, '').split('\n');
    for (const l of lines) expect(l.length, l).toBeLessThanOrEqual(WIDTH);
    // The step view: each step ticked with its duration (listr2 on a TTY), in the handoff's order.
    for (const step of ['mint', 'push', 'takeover', 'revoke', 'prove', 'record'])
      expect(text).toMatch(new RegExp(`✔ ${step}\\b.*\\d+(\\.\\d+)? ?m?s`));
    // A step this run did not need is one line, not a warning.
    expect(text).toMatch(/^↓ validate \(not needed\)$/m);
    expect(text).not.toContain('⚠');
    // The summary: aligned key: value lines, no box drawing.
    expect(text).toMatch(/^outcome: +handed-off$/m);
    expect(text).toMatch(/^credential fingerprint: +sha256:/m);
    expect(text).not.toMatch(/[│┌└─┼]/);
    // status: the receipt as key: value lines with keys as words and the time as an age.
    expect(text).toMatch(/^run id: +\d{14}-[0-9a-f]{6}$/m);
    expect(text).toMatch(/^recorded at: +\d+s ago$/m);
    // audit ls: a kubectl-style table, headers as words, the age relative.
    expect(text).toMatch(/^INDEX +AGE +CLUSTER +OUTCOME +FAILED STEP/m);
    expect(text).toMatch(/^0 +\d+s +tmux-\d+ +handed-off /m);
    expect(text).not.toMatch(JWT_PATTERN);
    for (const secret of bed.side.secretValues) expect(text).not.toContain(secret);
  }, 400_000);
});
