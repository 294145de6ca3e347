import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { ProcessError } from '@baton/errors';
import { tailFile } from './tail.js';

/** How to start one long-running component. */
export interface ProcessSpec {
  /** Component name used in messages, e.g. `kube-apiserver`. */
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  /** stdout and stderr go here (appended). */
  readonly logPath: string;
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * A child process in its own process group, so that stopping it also stops anything it started and
 * a Ctrl-C in the parent's terminal does not reach it half-way. Always reaped by {@link ManagedProcess.stop}.
 */
export class ManagedProcess {
  readonly spec: ProcessSpec;
  private readonly child: ChildProcess;
  private exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private readonly exitPromise: Promise<void>;

  private constructor(spec: ProcessSpec, child: ChildProcess) {
    this.spec = spec;
    this.child = child;
    this.exitPromise = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exited = { code, signal };
        resolve();
      });
    });
  }

  /** Starts the process. @throws ProcessError when the executable cannot be started. */
  static async start(spec: ProcessSpec): Promise<ManagedProcess> {
    const fd = openSync(spec.logPath, 'a');
    try {
      const child = spawn(spec.command, [...spec.args], {
        cwd: spec.cwd,
        env: spec.env ?? process.env,
        stdio: ['ignore', fd, fd],
        detached: true,
      });
      const proc = new ManagedProcess(spec, child);
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', (err) =>
          reject(
            new ProcessError(
              `${spec.name} could not be started: ${spec.command}: ${err.message}; run \`pnpm baton testenv build\` to (re)build the binaries`,
              {
                cause: err,
                details: { component: spec.name, command: spec.command },
              },
            ),
          ),
        );
      });
      // Don't keep the parent alive just for this child.
      child.unref();
      return proc;
    } finally {
      closeSync(fd);
    }
  }

  /** Process id (also the process group id). */
  get pid(): number {
    return this.child.pid!;
  }

  /** How the process ended (exit code, or the signal that killed it), once it has. */
  get exit(): { readonly code: number | null; readonly signal: NodeJS.Signals | null } | undefined {
    return this.exited;
  }

  /** True while the process has not exited. */
  get isRunning(): boolean {
    return this.exited === undefined;
  }

  /** An error describing an unexpected exit, with the last lines of the component's log. */
  async exitError(): Promise<ProcessError> {
    const how = this.exited
      ? this.exited.signal
        ? `was killed by ${this.exited.signal}`
        : `exited with code ${this.exited.code}`
      : 'is running';
    const tail = await tailFile(this.spec.logPath, 20);
    return new ProcessError(
      `${this.spec.name} ${how} during start: \`${this.spec.command} ${this.spec.args.join(' ')}\`; last lines of ${this.spec.logPath}:\n${tail}\nfix: ${startFailureHint(tail)}`,
      { details: { component: this.spec.name, logPath: this.spec.logPath, exit: this.exited } },
    );
  }

  /** Resolves when the process exits. */
  waitExit(): Promise<void> {
    return this.exitPromise;
  }

  /** SIGTERM to the group, SIGKILL after `graceMs`, and wait until reaped. */
  async stop(graceMs = 5_000): Promise<void> {
    if (!this.isRunning) return;
    // Waited for from here on: the child, unref'd at start, must hold the event loop until it is reaped, else a process
    // with nothing else to do exits (code 13, an unsettled top-level await) while a stop waits past the SIGKILL (seen:
    // the Argo CD demo, whose node took longer than the grace to stop).
    this.child.ref();
    signalGroup(this.pid, 'SIGTERM');
    const done = await Promise.race([this.exitPromise.then(() => true), sleep(graceMs).then(() => false)]);
    if (!done) {
      signalGroup(this.pid, 'SIGKILL');
      await this.exitPromise;
    }
    // The leader exiting does not mean the group is empty.
    signalGroup(this.pid, 'SIGKILL');
  }
}

/** Sends a signal to a whole process group; a group that is already gone is not an error. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

/** What to do about a component that died while starting, from the last lines of its log. */
export function startFailureHint(logTail: string): string {
  // A bed with a real node holds 18 inotify instances (control plane 10, node 8): the kernel's default per-user
  // limit of 128 runs out at the eighth.
  if (/too many open files/i.test(logTail))
    return 'the inotify instances of this user ran out (a bed with a real node holds 18): raise them with `sysctl -w fs.inotify.max_user_instances=1024` (scripts/setup.sh does), or run fewer beds at once';
  return 'read the log above; a port clash or a stale data directory are the usual causes (`pnpm baton testenv down --all` clears leftovers)';
}
