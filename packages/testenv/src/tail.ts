import { readFile } from 'node:fs/promises';

/** The last `lines` lines of a text file (for error messages), or a note that it could not be read. */
export async function tailFile(path: string, lines: number): Promise<string> {
  try {
    const text = await readFile(path, 'utf8');
    return text.trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return `(no log at ${path})`;
  }
}
