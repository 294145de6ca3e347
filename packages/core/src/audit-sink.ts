import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { AuditLog, createHandoffEvent, type HandoffRecord, readSigningKeyFile } from '@baton/audit';

/** Where a handoff record landed. */
export interface AuditAppendResult {
  /** Index of the event in the log (0-based). */
  readonly index: number;
  /** The event id (the run id). */
  readonly eventId: string;
  /** `sha256:<hex>` of the signed event as appended. */
  readonly eventDigest: string;
  /** The signed checkpoint written after the append (C2SP signed note text). */
  readonly checkpoint: string;
  /** The file holding that checkpoint. */
  readonly checkpointPath: string;
  readonly logPath: string;
}

/** Where the engine records handoffs. The real one is {@link openAuditSink}; tests may pass another. */
export interface AuditSink {
  /**
   * Signs and appends one record.
   * @throws {ConfigError} when the record breaks the audit schema or looks like it carries a credential.
   */
  append(record: HandoffRecord): Promise<AuditAppendResult>;
}

/** Options of {@link openAuditSink}. */
export interface OpenAuditSinkOptions {
  readonly logPath: string;
  readonly signingKeyPath: string;
  /** Checkpoint origin. */
  readonly origin: string;
}

/**
 * An {@link AuditSink} over `@baton/audit`'s Merkle log: the log is opened per append (and closed after), so a
 * long handoff does not hold the cross-process lock.
 * @throws {ConfigError} from `append` when the key or log cannot be read.
 */
export function openAuditSink(options: OpenAuditSinkOptions): AuditSink {
  return {
    async append(record) {
      const key = await readSigningKeyFile(options.signingKeyPath);
      const event = createHandoffEvent(record, key);
      await mkdir(dirname(options.logPath), { recursive: true });
      const log = await AuditLog.open(options.logPath, { origin: options.origin, signer: key });
      try {
        const r = await log.append(event);
        return {
          index: r.firstIndex,
          eventId: event.id,
          eventDigest: `sha256:${createHash('sha256').update(JSON.stringify(event)).digest('hex')}`,
          checkpoint: await readFile(r.checkpoint, 'utf8'),
          checkpointPath: r.checkpoint,
          logPath: options.logPath,
        };
      } finally {
        await log.close();
      }
    },
  };
}
