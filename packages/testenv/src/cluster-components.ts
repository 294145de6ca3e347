// The processes of one cluster: each started in the bed's namespace when it has one, logged to its own file, and
// recorded in state.json as it starts, so the watchdog and `baton testenv down` can find every one.
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { processStartTime } from '@baton/audit';
import type { ClusterState, ComponentNetwork } from './cluster-dir.js';
import type { ClusterLayout } from './component-args.js';
import { ManagedProcess } from './managed-process.js';
import { NODE_COMPONENTS } from './node/real-node.js';

/**
 * Components in start order; they stop in reverse (the node first, then the apiserver's clients, etcd last: no
 * storms of connection errors).
 */
export const COMPONENTS = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kwok',
  ...NODE_COMPONENTS,
] as const;
export type Component = (typeof COMPONENTS)[number];

/** The component processes of one cluster; state.json follows them as each starts. */
export class ClusterComponents {
  private readonly procs = new Map<string, ManagedProcess>();
  /** Processes started by someone else (the bed's registry), recorded for the watchdog. */
  private readonly tracked = new Map<string, number>();
  /** Start times, read as each process is recorded (our own children cannot have been replaced by then). */
  private readonly startTimes = new Map<string, string>();
  private saving = Promise.resolve();

  constructor(
    private readonly layout: ClusterLayout,
    private readonly net: ComponentNetwork | null,
    private readonly record: Omit<ClusterState, 'pids' | 'starts'>,
  ) {}

  get pids(): Record<string, number> {
    return { ...Object.fromEntries([...this.procs].map(([k, p]) => [k, p.pid])), ...Object.fromEntries(this.tracked) };
  }

  /**
   * Starts one component, inside the bed's network namespace when it has one, its output in
   * `logs/<component>.log`, and records its pid.
   */
  async start(component: Component, command: string, args: string[]): Promise<void> {
    const logPath = join(this.layout.logDir, `${component}.log`);
    const line = this.net ? this.net.wrap(command, args) : { command, args };
    const proc = await ManagedProcess.start({ name: component, ...line, logPath });
    this.procs.set(component, proc);
    this.noteStart(component, proc.pid);
    await this.saveState();
  }

  async track(name: string, pid: number): Promise<void> {
    this.tracked.set(name, pid);
    this.noteStart(name, pid);
    await this.saveState();
  }

  private noteStart(name: string, pid: number): void {
    const { start } = processStartTime(pid);
    if (start !== undefined) this.startTimes.set(name, start);
  }

  /** Any component that dies during start fails the start at once, with its log. */
  readonly guard = async (): Promise<void> => {
    for (const p of this.procs.values()) if (!p.isRunning) throw await p.exitError();
  };

  async stop(component: Component): Promise<void> {
    await this.procs.get(component)?.stop();
  }

  async stopAll(): Promise<void> {
    for (const c of [...COMPONENTS].reverse()) await this.stop(c);
  }

  /** Serialized and atomic (write + rename): components start concurrently, and the watchdog reads it any time. */
  saveState(): Promise<void> {
    this.saving = this.saving.then(async () => {
      const tmp = join(this.layout.dir, `state.json.${process.pid}.tmp`);
      const state: ClusterState = { ...this.record, pids: this.pids, starts: Object.fromEntries(this.startTimes) };
      await writeFile(tmp, `${JSON.stringify(state, null, 2)}\n`);
      await rename(tmp, join(this.layout.dir, 'state.json'));
    });
    return this.saving;
  }
}
