import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Writes `text` to `path` unless it holds exactly that already, through a staging file renamed into place, so that
 * concurrent test processes never read half a file.
 */
export async function writeIfChanged(path: string, text: string): Promise<void> {
  if (existsSync(path) && (await readFile(path, 'utf8')) === text) return;
  const staging = `${path}.${process.pid}.tmp`;
  await mkdir(dirname(path), { recursive: true });
  await writeFile(staging, text);
  await rename(staging, path);
}
