import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { checkpointsDir } from './checkpoint-store.js';
import { MerkleFrontier } from './merkle-tree.js';

/** Where a writer is in the log: entries, bytes, the tree's right edge, and the last recordedtime. */
export interface TreeState {
  readonly size: number;
  readonly bytes: number;
  readonly frontier: MerkleFrontier;
  readonly lastRecordedMs: number;
}

/** The cache file that saves a writer from re-hashing the whole log on open. */
export function treeStatePath(logPath: string): string {
  return join(checkpointsDir(logPath), 'tree-state.json');
}

/**
 * Reads the cached tree state. It is only a hint: the caller trusts it only if its root equals a signed
 * checkpoint's root for the same size (finding a different frontier with that root would break SHA-256).
 * Returns undefined when the cache is missing or unreadable.
 */
export async function readTreeState(logPath: string): Promise<TreeState | undefined> {
  try {
    const raw = JSON.parse(await readFile(treeStatePath(logPath), 'utf8')) as {
      size: number;
      bytes: number;
      nodes: string[];
      lastRecordedMs: number;
    };
    if (!Number.isSafeInteger(raw.bytes) || raw.bytes < 0 || typeof raw.lastRecordedMs !== 'number') return undefined;
    const frontier = MerkleFrontier.fromJSON({ size: raw.size, nodes: raw.nodes });
    return { size: frontier.size, bytes: raw.bytes, frontier, lastRecordedMs: raw.lastRecordedMs };
  } catch {
    return undefined;
  }
}

/**
 * Writes the cached tree state (atomically by rename). Not fsynced: a cache lost in a crash only costs one
 * re-scan of the log on the next open.
 */
export async function writeTreeState(logPath: string, state: TreeState): Promise<void> {
  const path = treeStatePath(logPath);
  const temp = `${path}.${process.pid}.tmp`;
  const { size, nodes } = state.frontier.toJSON();
  await writeFile(temp, JSON.stringify({ size, bytes: state.bytes, nodes, lastRecordedMs: state.lastRecordedMs }));
  await rename(temp, path);
}
