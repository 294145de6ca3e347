/** What a renderer needs to know of the terminal it writes to. */
export interface Screen {
  /** Columns a line may take. */
  readonly width: number;
  /** Escape codes (colour, spinners) allowed. */
  readonly color: boolean;
}

/** The stream a command prints to, as far as its width and colour go. */
export interface ScreenStream {
  readonly isTTY?: boolean;
  readonly columns?: number;
}

/** Width when the output is not a terminal (a pipe, a file, CI), as kubectl and git assume. */
export const DEFAULT_WIDTH = 80;

/**
 * The screen of `stream`: its columns when it is a terminal, else `$COLUMNS` when set, else 80. Colour only on a
 * terminal, never with `NO_COLOR` set (no-color.org) or `--no-color` (`noColor`), and `TERM=dumb` gets none either.
 */
export function screenOf(
  stream: ScreenStream = process.stdout,
  env: NodeJS.ProcessEnv = process.env,
  noColor = false,
): Screen {
  const fromEnv = Number(env.COLUMNS);
  const width =
    stream.isTTY && stream.columns && stream.columns > 0
      ? stream.columns
      : Number.isInteger(fromEnv) && fromEnv > 0
        ? fromEnv
        : DEFAULT_WIDTH;
  const color = !noColor && stream.isTTY === true && !env.NO_COLOR && env.TERM !== 'dumb';
  return { width, color };
}
