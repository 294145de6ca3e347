import { mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { createLogger, type Logger } from '@baton/core';
import { pino } from 'pino';
import type { LogRecord } from './step-tracker.js';

/** Options of {@link createRunLog}. */
export interface RunLogOptions {
  /** The full log goes to stderr (pretty on a TTY) instead of a file. */
  readonly verbose: boolean;
  /** The log file when not verbose. */
  readonly file: string;
  /** Sees every record (for the step view's facts). */
  readonly onRecord?: (record: LogRecord) => void;
  /** Minimum level. @default 'info' */
  readonly level?: pino.LevelWithSilent;
}

/** The run's logger and where its full log went. */
export interface RunLog {
  readonly log: Logger;
  /** The log file, or undefined with --verbose (stderr). */
  readonly path: string | undefined;
}

/**
 * The logger of a CLI run: the full pino log (baton's one redaction list applies) to a file, or to stderr with
 * --verbose, and every record also handed to `onRecord`, so the step view shows live facts without a second channel.
 */
export function createRunLog(o: RunLogOptions): RunLog {
  const level = o.level ?? 'info';
  const sink = o.verbose
    ? pino.destination({ dest: 2, sync: true })
    : (() => {
        mkdirSync(dirname(o.file), { recursive: true });
        return pino.destination({ dest: openSync(o.file, 'a', 0o600), sync: true });
      })();
  const destination = {
    write(line: string) {
      sink.write(line);
      if (o.onRecord) {
        try {
          o.onRecord(JSON.parse(line) as LogRecord);
        } catch {
          // Not one JSON line: nothing the view can use.
        }
      }
    },
  };
  return { log: createLogger({ level, destination }), path: o.verbose ? undefined : o.file };
}
