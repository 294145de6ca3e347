import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { startFailureHint } from './managed-process.js';

const run = promisify(execFile);
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('ManagedProcess.stop', () => {
  it('holds the event loop until a child that ignores SIGTERM is killed and reaped (no exit 13 midway)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-managed-'));
    dirs.push(dir);
    // A process with nothing else to do: before the fix it exited with 13 (an unsettled top-level await) while stop()
    // waited for the SIGKILLed child, whose handle start() had unref'd.
    const script = `
      import { ManagedProcess } from ${JSON.stringify(new URL('./managed-process.ts', import.meta.url).pathname)};
      const p = await ManagedProcess.start({ name: 'stubborn', command: 'sh', args: ['-c', 'trap "" TERM; sleep 30 & wait; sleep 30'], logPath: ${JSON.stringify(join(dir, 'log'))} });
      await p.stop(200);
      process.stdout.write(p.isRunning ? 'running' : 'stopped');
    `;
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      timeout: 30_000,
    });
    expect(stdout).toBe('stopped');
  });
});

describe('startFailureHint', () => {
  it('names the inotify limit when a component ran out of open files, else the usual causes', () => {
    expect(startFailureHint('E1206 run.go:72] "command failed" err="failed complete: too many open files"')).toMatch(
      /fs\.inotify\.max_user_instances=1024/,
    );
    expect(startFailureHint('listen tcp 127.0.0.1:6443: bind: address already in use')).toMatch(/port clash/);
  });
});
