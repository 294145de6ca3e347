import { randomBytes } from 'node:crypto';
import { link, mkdir, open, readdir, readFile, rm, stat, unlink } from 'node:fs/promises';
import { basename, join } from 'node:path';

const CHECKPOINT_FILE = /^(\d{20})\.checkpoint$/;
const TEMP_SUFFIX = '.tmp';
// A checkpoint is three short lines and a few signatures; anything much larger is not one.
const MAX_CHECKPOINT_BYTES = 64 * 1024;

/** The folder that holds a log's checkpoints: `<log>.checkpoints/`, next to the log. */
export function checkpointsDir(logPath: string): string {
  return `${logPath}.checkpoints`;
}

/** File name of the checkpoint for a tree size: zero-padded, so names sort by size. */
export function checkpointFileName(size: number): string {
  return `${String(size).padStart(20, '0')}.checkpoint`;
}

/** A checkpoint file found next to a log. */
export interface StoredCheckpoint {
  /** Tree size from the file name. */
  readonly size: number;
  /** Absolute or log-relative path of the file. */
  readonly path: string;
}

/** Lists the checkpoint files of a log, smallest tree size first. A missing folder gives an empty list. */
export async function listCheckpoints(logPath: string): Promise<StoredCheckpoint[]> {
  const dir = checkpointsDir(logPath);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT') return [];
    throw err;
  }
  return names
    .map((name) => CHECKPOINT_FILE.exec(name))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ size: Number(m[1]), path: join(dir, m[0]) }))
    .sort((a, b) => a.size - b.size);
}

/** Reads a checkpoint file, refusing anything too large to be one. */
export async function readCheckpointFile(path: string): Promise<Buffer> {
  const info = await stat(path);
  if (info.size > MAX_CHECKPOINT_BYTES)
    throw new RangeError(`${basename(path)} is ${info.size} bytes, not a checkpoint`);
  return readFile(path);
}

/**
 * Writes a signed checkpoint atomically and durably: a temp file is written and fsynced, then hard-linked to its
 * final name (which fails rather than replaces if a checkpoint of that size exists: a log must never sign two
 * different checkpoints of one size), then the folder is fsynced so the new name survives a crash.
 * @returns the path of the checkpoint file.
 * @throws when a different checkpoint of the same size already exists.
 */
export async function writeCheckpoint(logPath: string, size: number, note: string): Promise<string> {
  const dir = checkpointsDir(logPath);
  await mkdir(dir, { recursive: true });
  const final = join(dir, checkpointFileName(size));
  const temp = join(dir, `.${checkpointFileName(size)}.${process.pid}.${randomBytes(4).toString('hex')}${TEMP_SUFFIX}`);
  const fh = await open(temp, 'wx', 0o644);
  try {
    await fh.writeFile(note, 'utf8');
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await link(temp, final);
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'EEXIST' || (await readFile(final, 'utf8')) !== note) throw err;
  } finally {
    await unlink(temp);
  }
  await fsyncDir(dir);
  return final;
}

/** Removes temp files a crashed writer left in the checkpoints folder. Call only while holding the log lock. */
export async function removeStaleTempFiles(logPath: string): Promise<void> {
  const dir = checkpointsDir(logPath);
  const names = await readdir(dir).catch(() => [] as string[]);
  await Promise.all(names.filter((n) => n.endsWith(TEMP_SUFFIX)).map((n) => rm(join(dir, n), { force: true })));
}

/** fsyncs a directory so that entries created or renamed in it are durable. */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
