import { shorten } from './shorten.js';

/** One `key: value` line of a single object; `undefined` and empty values are left out. */
export type Field = readonly [label: string, value: string | number | boolean | undefined];

/**
 * A single object as aligned `key: value` lines (kubectl describe). Not wide: a value longer than the screen wraps
 * at spaces onto lines indented under it, and a single word still too long (a digest, an identity) is shortened in
 * the middle. Wide: every value whole on its line.
 */
export function renderFields(fields: readonly Field[], o: { readonly width: number; readonly wide?: boolean }): string {
  const shown = fields
    .filter(([, v]) => v !== undefined && v !== '')
    .map(([k, v]) => [`${k}:`, String(v).replace(/\s*[\r\n]+\s*/g, ' ')] as const);
  const keyWidth = Math.max(0, ...shown.map(([k]) => k.length)) + 2;
  // A narrow screen still gets a readable value column.
  const indent = Math.min(keyWidth, Math.max(2, o.width - 20));
  const room = Math.max(10, o.width - indent);
  const out: string[] = [];
  for (const [k, v] of shown) {
    const head = k.length + 2 > indent ? `${k}\n${' '.repeat(indent)}` : k.padEnd(indent);
    if (o.wide) {
      out.push(`${head}${v}`);
      continue;
    }
    const lines = wrap(v, room);
    out.push(`${head}${lines[0] ?? ''}`, ...lines.slice(1).map((l) => `${' '.repeat(indent)}${l}`));
  }
  return out.length > 0 ? `${out.join('\n')}\n` : '';
}

/** `text` in lines of at most `room` characters, broken at spaces; a longer word is shortened in the middle. */
function wrap(text: string, room: number): string[] {
  const lines: string[] = [];
  let current = '';
  for (const raw of text.split(' ')) {
    const word = shorten(raw, room);
    if (current === '') current = word;
    else if (current.length + 1 + word.length <= room) current = `${current} ${word}`;
    else {
      lines.push(current);
      current = word;
    }
  }
  lines.push(current);
  return lines;
}
