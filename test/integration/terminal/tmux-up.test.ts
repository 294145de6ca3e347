import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { HandoffBed } from '@baton/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoBed } from '../../../scripts/demo/bed.js';
import { CLI, JWT_PATTERN } from '../../support/handoff-run.js';

// What a person sees: `baton up` in a real terminal (Debian's tmux, an 80-column pane), read back with capture-pane.
// The live step view redraws in place; once it ends, the screen holds the steps and a summary with no wrapped line.
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
    const command = [
      process.execPath,
      '--conditions=@baton/source',
      '--import',
      'tsx',
      CLI,
      'up',
      '--plan',
      bed.side.planPath,
    ].join(' ');
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
      `${command}; echo "baton exited $?"; sleep 600`,
    ]);
    let text = '';
    const deadline = Date.now() + 300_000;
    while (Date.now() < deadline) {
      text = await screen();
      if (/baton exited \d+/.test(text)) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    process.stderr.write(`--- the pane ---\n${text}\n---\n`);
    expect(text).toMatch(/baton exited 0/);
    const lines = text.replace(/\s+$/, '').split('\n');
    for (const l of lines) expect(l.length, l).toBeLessThanOrEqual(WIDTH);
    // The step view: each step ticked with its duration (listr2 on a TTY), in the handoff's order.
    for (const step of ['mint', 'push', 'takeover', 'revoke', 'prove', 'record'])
      expect(text).toMatch(new RegExp(`✔ ${step}\\b.*\\d+(\\.\\d+)? ?m?s`));
    // The summary: aligned key: value lines, no box drawing.
    expect(text).toMatch(/^outcome: +handed-off$/m);
    expect(text).toMatch(/^credential fingerprint: +sha256:/m);
    expect(text).not.toMatch(/[│┌└─┼]/);
    expect(text).not.toMatch(JWT_PATTERN);
    for (const secret of bed.side.secretValues) expect(text).not.toContain(secret);
  }, 400_000);
});
