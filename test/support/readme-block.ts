import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const README = fileURLToPath(new URL('../../README.md', import.meta.url));

/**
 * The shell block the README marks `<!-- readme-block: <name> … -->`, as its lines (comments kept: a user pastes them
 * too). Tests run these lines as they stand, so the README and the test cannot drift apart.
 * @throws when the marker or its fenced block is missing.
 */
export function readmeBlock(name: string): string[] {
  const text = readFileSync(README, 'utf8');
  const marker = text.indexOf(`<!-- readme-block: ${name} `);
  if (marker < 0) throw new Error(`README.md has no <!-- readme-block: ${name} --> marker`);
  const fence = /```sh\n([\s\S]*?)\n```/.exec(text.slice(marker));
  if (!fence || fence.index > text.slice(marker).indexOf('\n') + 1)
    throw new Error(`README.md: the readme-block ${name} marker is not followed by a \`\`\`sh block`);
  return (fence[1] ?? '').split('\n');
}
