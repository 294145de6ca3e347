import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One line of the local journal: a step transition, written before the step acts. */
export interface JournalEntry {
  readonly runId: string;
  readonly cluster: string;
  /** `start`, a step name, or `finished`. */
  readonly step: string;
  readonly at: string;
  /** Secret-free facts the step needs to resume (object names, credential fingerprint and JTI, times). */
  readonly data?: Record<string, unknown>;
}

/** A run the journal says started and never finished. */
export interface UnfinishedRun {
  readonly runId: string;
  readonly entries: readonly JournalEntry[];
  readonly lastStep: string;
}

/**
 * The local, append-only step journal of one cluster (`<dir>/<cluster>.jsonl`). Appends are synchronous, so an
 * entry is on disk before the step it announces acts; a `kill -9` loses nothing already journaled.
 */
export class Journal {
  readonly path: string;
  readonly cluster: string;

  /** Opens (creating the folder of) the journal for `cluster` in `dir`. */
  constructor(dir: string, cluster: string) {
    mkdirSync(dir, { recursive: true });
    this.path = join(dir, `${cluster}.jsonl`);
    this.cluster = cluster;
  }

  /** Appends one transition. Never pass a token in `data`. */
  write(runId: string, step: string, at: Date, data?: Record<string, unknown>): void {
    const entry: JournalEntry = { runId, cluster: this.cluster, step, at: at.toISOString(), ...(data ? { data } : {}) };
    appendFileSync(this.path, `${JSON.stringify(entry)}\n`, { mode: 0o600 });
  }

  /** Every entry, in order; a torn last line (crash mid-write) is skipped. */
  entries(): JournalEntry[] {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch {
      return [];
    }
    const out: JournalEntry[] = [];
    for (const line of text.split('\n')) {
      if (!line) continue;
      try {
        out.push(JSON.parse(line) as JournalEntry);
      } catch {
        // A torn line is the tail of a crashed write; the step it announced never acted.
      }
    }
    return out;
  }

  /**
   * Audit records a run could not append (`record-pending`) and no run has appended since (`recorded` after it), in
   * order. They are secret-free by construction (the audit schema refuses credentials).
   */
  pendingRecords(): { runId: string; record: unknown }[] {
    const pending = new Map<string, unknown>();
    for (const e of this.entries()) {
      if (e.step === 'record-pending') pending.set(e.runId, e.data?.record);
      else if (e.step === 'recorded') pending.delete(e.runId);
    }
    return [...pending].map(([runId, record]) => ({ runId, record }));
  }

  /** Runs that started and have no `finished` entry, oldest first. */
  unfinished(): UnfinishedRun[] {
    const byRun = new Map<string, JournalEntry[]>();
    for (const e of this.entries()) byRun.set(e.runId, [...(byRun.get(e.runId) ?? []), e]);
    return [...byRun]
      .filter(([, es]) => !es.some((e) => e.step === 'finished'))
      .map(([runId, es]) => ({ runId, entries: es, lastStep: es.at(-1)?.step ?? 'start' }));
  }
}
