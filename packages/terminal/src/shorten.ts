/** The mark a shortened value carries where text was left out. */
export const ELLIPSIS = '…';

/**
 * `text` in at most `max` characters. `middle` keeps the head and the tail (digests, identities, paths: both ends
 * tell them apart, `sha256:0f5e…9c1a`); `end` keeps the head (prose).
 */
export function shorten(text: string, max: number, how: 'middle' | 'end' = 'middle'): string {
  if (text.length <= max) return text;
  if (max <= 1) return ELLIPSIS.slice(0, max);
  if (how === 'end') return `${text.slice(0, max - 1)}${ELLIPSIS}`;
  const tail = Math.floor((max - 1) / 2);
  return `${text.slice(0, max - 1 - tail)}${ELLIPSIS}${tail > 0 ? text.slice(-tail) : ''}`;
}

/** One line: newlines and tabs in a value would break a table's alignment. */
export function oneLine(text: string): string {
  return text.replace(/\s*[\r\n\t]+\s*/g, ' ');
}
