import { ConfigError } from '@baton/errors';
import type { FleetStatement } from './fleet-record.js';
import { describeFsError } from './fs-error.js';
import { type AuditStatement, isFleetStatement, type LogEntry } from './handoff-event.js';
import { forEachLine, type LineBlock, readLineBlocks } from './line-blocks.js';
import { parseLogLine, parseStatementPayload } from './parse-entry.js';
import type { HandoffStatement } from './statement.js';

/** One entry read back from a log (not verified: use {@link verifyLog} for that). */
export interface DecodedEntry {
  /** Position in the log (0-based); the file line is `index + 1`. */
  readonly index: number;
  readonly entry: LogEntry;
  readonly statement: HandoffStatement;
}

/** A fleet run's `fleet-started` or `fleet-finished` event read back from a log (not verified). */
export interface DecodedFleetEntry {
  readonly index: number;
  readonly entry: LogEntry;
  readonly statement: FleetStatement;
}

/** Decodes one log line without checking signatures. Returns a reason string instead of throwing. */
export function decodeEntry(line: Uint8Array): { entry: LogEntry; statement: AuditStatement } | string {
  const parsed = parseLogLine(line);
  if ('problem' in parsed) return parsed.problem;
  const statement = parseStatementPayload(parsed.payload);
  return typeof statement === 'string' ? statement : { entry: parsed.entry, statement };
}

/** Options of {@link readEntries}. */
export interface ReadEntriesOptions {
  /** Called for a line that is not an entry, which is then skipped. @default throw a ConfigError */
  readonly onBadLine?: (index: number, reason: string) => void;
  /** Called for each fleet event (they frame a fleet run's handoffs). @default skipped */
  readonly onFleetEvent?: (entry: DecodedFleetEntry) => void;
}

/**
 * Streams a log's handoff entries in order, decoded but not verified (for listing and reports); fleet events go to
 * `onFleetEvent`. A trailing line without a newline (an append in progress) is skipped.
 * @throws {ConfigError} when the file cannot be read or (without `onBadLine`) a line is not an entry, naming the
 * file, line and cause.
 */
export async function* readEntries(logPath: string, options: ReadEntriesOptions = {}): AsyncGenerator<DecodedEntry> {
  let index = 0;
  const blocks = readLineBlocks(logPath);
  for (;;) {
    let next: IteratorResult<LineBlock>;
    try {
      next = await blocks.next();
    } catch (err) {
      throw new ConfigError(`cannot read audit log ${logPath}: ${describeFsError(err)}`, { cause: err });
    }
    if (next.done || next.value.type === 'torn') return;
    if (next.value.type === 'oversized') {
      throw new ConfigError(`${logPath}:${index + 1}: line is longer than 1 MiB; this is not a baton audit log`);
    }
    const bytes = next.value.bytes;
    const decoded: DecodedEntry[] = [];
    forEachLine(bytes, (s, e) => {
      const d = decodeEntry(bytes.subarray(s, e));
      if (typeof d === 'string' && options.onBadLine) {
        options.onBadLine(index++, d);
        return;
      }
      if (typeof d === 'string') {
        throw new ConfigError(
          `${logPath}:${index + 1}: entry ${index} ${d}; run \`baton audit verify\` to check the whole log`,
        );
      }
      if (isFleetStatement(d.statement)) options.onFleetEvent?.({ index, entry: d.entry, statement: d.statement });
      else decoded.push({ index, entry: d.entry, statement: d.statement });
      index++;
    });
    yield* decoded;
  }
}
