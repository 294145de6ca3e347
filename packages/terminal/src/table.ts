import { oneLine, shorten } from './shorten.js';

/** One column of a table: its header (separate words, kubectl style) and how a row fills it. */
export interface Column<R> {
  /** Header, upper case with spaces: `LAST RUN`, `LIVE (S)`. */
  readonly header: string;
  /** The cell of `row`, whole (the table shortens it to fit). */
  value(row: R): string;
  /** Only in `-o wide`. */
  readonly wide?: boolean;
  /** How the cell is shortened to fit: `middle` (digests, identities, paths), `end` (prose), never when unset. */
  readonly shrink?: 'middle' | 'end';
  /** Dropped before anything else is cut when the screen is too narrow (a column `-o wide` shows whole). */
  readonly optional?: boolean;
}

/** Spaces between columns (kubectl's tabwriter padding). */
const GAP = 3;
/** Shortened before any column is dropped, a cell keeps this much (enough to tell two identities apart). */
const SOFT_FLOOR = 24;
/** Shortened after the optional columns are gone, a cell keeps at least this much, or its header's width. */
const HARD_FLOOR = 10;

/**
 * Rows as a column-aligned table without box drawing, headers on the first line. Not wide: no line is longer than
 * `width`: shrinkable cells are shortened to a readable length first, then optional columns dropped from the right,
 * then shrinkable cells shortened further, then the last column cut. Wide: every column, every value whole, as
 * `kubectl get -o wide` does.
 */
export function renderTable<R>(
  rows: readonly R[],
  columns: readonly Column<R>[],
  o: { readonly width: number; readonly wide?: boolean },
): string {
  let shown = columns.filter((c) => o.wide || !c.wide);
  const cells = new Map(shown.map((c) => [c, rows.map((r) => oneLine(c.value(r)))]));
  const natural = (c: Column<R>) => Math.max(c.header.length, ...(cells.get(c) ?? []).map((x) => x.length));
  const widths = new Map(shown.map((c) => [c, natural(c)]));
  const total = () => shown.reduce((a, c) => a + (widths.get(c) ?? 0), 0) + GAP * Math.max(0, shown.length - 1);
  /** Shortens shrinkable columns down to `floor` while the table is too wide: prose before identities, widest first. */
  const shrinkTo = (floor: number) => {
    for (;;) {
      const excess = total() - o.width;
      if (excess <= 0) return;
      const at = (c: Column<R>) => Math.max(c.header.length, floor);
      const widest = shown
        .filter((c) => c.shrink && (widths.get(c) ?? 0) > at(c))
        .sort(
          (a, b) =>
            Number(b.shrink === 'end') - Number(a.shrink === 'end') || (widths.get(b) ?? 0) - (widths.get(a) ?? 0),
        )[0];
      if (!widest) return;
      widths.set(widest, Math.max(at(widest), (widths.get(widest) ?? 0) - excess));
    }
  };
  if (!o.wide) {
    shrinkTo(SOFT_FLOOR);
    for (let i = shown.length - 1; i >= 0 && total() > o.width; i--) {
      const c = shown[i];
      if (c?.optional) shown = shown.filter((x) => x !== c);
    }
    shrinkTo(HARD_FLOOR);
    // Last resort: the last column takes what is left.
    const last = shown[shown.length - 1];
    if (last && total() > o.width) widths.set(last, Math.max(1, (widths.get(last) ?? 0) - (total() - o.width)));
  }
  const line = (values: readonly string[]) =>
    values
      .map((v, i) => {
        const c = shown[i];
        const w = c ? (widths.get(c) ?? v.length) : v.length;
        const fitted = v.length > w ? shorten(v, w, c?.shrink ?? 'end') : v;
        return i === values.length - 1 ? fitted : fitted.padEnd(w + GAP);
      })
      .join('')
      .trimEnd();
  const out = [line(shown.map((c) => c.header))];
  for (let r = 0; r < rows.length; r++) out.push(line(shown.map((c) => cells.get(c)?.[r] ?? '')));
  return `${out.join('\n')}\n`;
}

/** The length of the longest line of `text`: what has to fit the screen. */
export function widestLine(text: string): number {
  return Math.max(0, ...text.split('\n').map((l) => l.length));
}
