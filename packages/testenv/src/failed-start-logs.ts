import { cp, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** How many failed starts keep their logs; older ones are removed when a new one is kept. */
const KEPT = 5;

/**
 * Copies the logs of a bed whose start failed to `<base>/.failed-starts/<name>` before its directory is removed,
 * and points the error's log hints there: a start that times out under load is otherwise undiagnosable, because
 * the teardown deletes the very file the error names. Never throws (the start's own error is the one to report).
 */
export async function keepFailedStartLogs(err: unknown, logDir: string, base: string, name: string): Promise<void> {
  const root = join(base, '.failed-starts');
  const kept = join(root, name);
  try {
    await mkdir(root, { recursive: true });
    await cp(logDir, kept, { recursive: true });
    const others = (await readdir(root)).filter((n) => n !== name).map((n) => join(root, n));
    const aged = await Promise.all(others.map(async (path) => ({ path, mtime: (await stat(path)).mtimeMs })));
    aged.sort((a, b) => a.mtime - b.mtime);
    for (const { path } of aged.slice(0, Math.max(0, aged.length - (KEPT - 1))))
      await rm(path, { recursive: true, force: true });
  } catch {
    return;
  }
  if (err instanceof Error) {
    err.message = err.message.includes(logDir)
      ? err.message.replaceAll(logDir, kept)
      : `${err.message} (the bed's logs are kept in ${kept})`;
  }
}
