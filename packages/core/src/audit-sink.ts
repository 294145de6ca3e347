import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  AuditLog,
  checkSigner,
  createHandoffEvent,
  type HandoffEvent,
  type HandoffRecord,
  openSigner,
  type Signer,
  type SignerIdentity,
  type SignerSpec,
  writeSigstoreBundle,
} from '@baton/audit';

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
  /**
   * The same signed statement as a Sigstore bundle v0.3 (`baton audit verify` and sigstore-js read it). Absent from
   * a result a run journaled before bundles were written.
   */
  readonly bundlePath?: string;
}

/** Where the engine records handoffs. The real one is {@link openAuditSink}; tests may pass another. */
export interface AuditSink {
  /**
   * Checks, before anything is minted, that the signer answers with the configured key (reads the key file, or has
   * the signer command sign a probe), so a handoff never runs only to find it cannot be recorded.
   * @returns what signs (its kind and public key, never key material), or undefined when another process signs and
   * checked its signer itself (the fleet orchestrator, for a Job engine shard).
   * @throws {ConfigError} or {ProcessError} naming the key file or command and the fix.
   */
  check(): Promise<SignerIdentity | undefined>;
  /**
   * Signs and appends one record.
   * @throws {ConfigError} when the record breaks the audit schema or looks like it carries a credential.
   */
  append(record: HandoffRecord): Promise<AuditAppendResult>;
}

/** Options of {@link openAuditSink}. */
export interface OpenAuditSinkOptions {
  readonly logPath: string;
  readonly signer: SignerSpec;
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
    check: () => checkSigner(options.signer, 'audit.signer'),
    async append(record) {
      const signer = await openSigner(options.signer, 'audit.signer');
      try {
        const event = await createHandoffEvent(withSigner(record, signer), signer);
        await mkdir(dirname(options.logPath), { recursive: true });
        const log = await AuditLog.open(options.logPath, { origin: options.origin, signer });
        try {
          return await appendEvent(log, event, options.logPath);
        } finally {
          await log.close();
        }
      } finally {
        await signer.close?.();
      }
    },
  };
}

/** The record with what signs it (the kind of key and its public half), as the audit event states it. */
export function withSigner(record: HandoffRecord, signer: Signer): HandoffRecord {
  return { ...record, signer: { kind: signer.kind, verifierKey: signer.verifierKey } };
}

/**
 * Appends one signed event to an open log, writes its Sigstore bundle beside it, and says where both landed (the
 * fleet's writer uses it too).
 */
export async function appendEvent(log: AuditLog, event: HandoffEvent, logPath: string): Promise<AuditAppendResult> {
  const r = await log.append(event);
  return {
    bundlePath: await writeSigstoreBundle(logPath, event.id, event.data),
    index: r.firstIndex,
    eventId: event.id,
    eventDigest: `sha256:${createHash('sha256').update(JSON.stringify(event)).digest('hex')}`,
    checkpoint: await readFile(r.checkpoint, 'utf8'),
    checkpointPath: r.checkpoint,
    logPath,
  };
}
