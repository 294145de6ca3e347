import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const README = fileURLToPath(new URL('../../README.md', import.meta.url));

/**
 * The shell block the README marks `<!-- readme-block: <name> … -->`, as its lines (comments kept: a user pastes them
 * too). Tests run these lines as they stand, so the README and the test cannot drift apart.
 * @throws when the marker or its fenced block is missing.
 */
export function readmeBlock(name: string): string[] {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // The marker line, then the fenced block on the very next line.
  const fence = new RegExp(`^<!-- readme-block: ${escaped} [^\\n]*-->\\n\`\`\`sh\\n([\\s\\S]*?)\\n\`\`\``, 'm').exec(
    readFileSync(README, 'utf8'),
  );
  if (!fence) throw new Error(`README.md has no <!-- readme-block: ${name} … --> marker followed by a \`\`\`sh block`);
  return (fence[1] ?? '').split('\n');
}
