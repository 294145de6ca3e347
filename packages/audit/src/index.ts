// The public API of @baton/audit. Everything else is internal.
export type { AppendResult, AuditLogOptions, RepairReport } from './audit-log.js';
export { AuditLog } from './audit-log.js';
export type { Checkpoint } from './checkpoint.js';
export { DEFAULT_ORIGIN, formatCheckpoint, parseCheckpoint } from './checkpoint.js';
export { checkpointsDir, listCheckpoints } from './checkpoint-store.js';
export type { CommandSignerOptions } from './command-signer.js';
export { createCommandSigner } from './command-signer.js';
export type { DsseEnvelope } from './dsse.js';
export { DsseEnvelopeSchema, IN_TOTO_PAYLOAD_TYPE, preAuthEncoding } from './dsse.js';
export type { FileLock, FileLockOptions } from './file-lock.js';
export { acquireFileLock } from './file-lock.js';
export type { FleetRecord, FleetStatement } from './fleet-record.js';
export { FLEET_EVENT_TYPE, FLEET_PREDICATE_TYPE, FleetRecordSchema, FleetStatementSchema } from './fleet-record.js';
export type { AuditStatement, HandoffEvent, LogEntry } from './handoff-event.js';
export {
  createFleetEvent,
  createHandoffEvent,
  DSSE_CONTENT_TYPE,
  HANDOFF_EVENT_TYPE,
  HandoffEventSchema,
  isFleetStatement,
  LogEntrySchema,
} from './handoff-event.js';
export type { HandoffRecord } from './handoff-record.js';
export {
  credentialLiveSeconds,
  HANDOFF_STEPS,
  HandoffOutcome,
  HandoffRecordSchema,
} from './handoff-record.js';
export {
  attestImage,
  COSIGN_SIGN_PREDICATE_TYPE,
  imageSignatureStatement,
  SLSA_PROVENANCE_PREDICATE_TYPE,
  signImage,
  verifyCosignV2ImageSignature,
  verifyImageSignature,
  verifyKeylessImageSignature,
} from './image-signature.js';
export { readSigningKeyFile, writeSigningKeyFile, writeSigningKeyPair } from './key-files.js';
export type { KeylessIdentity, KeylessSignature, KeylessTrust } from './keyless.js';
export {
  COSIGN_ANNOTATIONS,
  COSIGN_SIMPLE_SIGNING_MEDIA_TYPE,
  describeIdentity,
  isKeylessBundle,
  keylessTrust,
  verifyCosignV2Signature,
  verifyKeylessBundle,
} from './keyless.js';
export type { LineBlock, ReadLineBlocksOptions } from './line-blocks.js';
export { forEachLine, readLineBlocks } from './line-blocks.js';
export {
  consistencyProof,
  inclusionProof,
  rootFromInclusionProof,
  verifyConsistencyProof,
  verifyInclusionProof,
} from './merkle-proof.js';
export { EMPTY_ROOT, hashChildren, hashLeaf, MerkleFrontier, subtreeRoot } from './merkle-tree.js';
export type { SignerIdentity, SignerSpec } from './open-signer.js';
export { checkSigner, openSigner, probeSigner } from './open-signer.js';
export type { Pkcs11SignerOptions } from './pkcs11-signer.js';
export { generatePkcs11Key, openPkcs11Signer } from './pkcs11-signer.js';
export type { Pkcs11Uri } from './pkcs11-uri.js';
export { parsePkcs11Uri, redactPkcs11Uri } from './pkcs11-uri.js';
export { isProcessAlive, isSameProcess, processStartTime } from './process-alive.js';
export type { InclusionProof, InclusionVerdict, ProveOptions } from './prove.js';
export { formatTlogProof, parseTlogProof, proveConsistency, proveInclusion, verifyInclusion } from './prove.js';
export type { DecodedEntry, DecodedFleetEntry, ReadEntriesOptions } from './read-entries.js';
export { decodeEntry, readEntries } from './read-entries.js';
export { renderReport } from './render-report.js';
export type { BuildReportOptions } from './report.js';
export { buildReport } from './report.js';
export type { ClusterSummary, HandoffSummary, ReportModel } from './report-model.js';
export { ReportBuilder } from './report-model.js';
export type { NoteSignature, ParsedNote } from './signed-note.js';
export { parseNote, signNote } from './signed-note.js';
export type { Signer, SignerKind, VerifierKey } from './signing-key.js';
export {
  formatVerifierKey,
  generateSigningKey,
  isValidKeyName,
  noteKeyId,
  parseSigningKey,
  parseVerifierKey,
  SigningKey,
} from './signing-key.js';
export type { SigstoreBundle, VerifiedBundle } from './sigstore-bundle.js';
export {
  bundlePath,
  SIGSTORE_BUNDLE_MEDIA_TYPE,
  SigstoreBundleSchema,
  toSigstoreBundle,
  verifySigstoreBundle,
  writeSigstoreBundle,
} from './sigstore-bundle.js';
export type { HandoffStatement } from './statement.js';
export { HANDOFF_PREDICATE_TYPE, HandoffStatementSchema, IN_TOTO_STATEMENT_TYPE } from './statement.js';
export type { SynthOptions } from './synth.js';
export { synthRecords } from './synth.js';
export type { TrustedKey, TrustedKeysFile } from './trusted-keys.js';
export {
  formatTrustedKeys,
  loadTrustedKeys,
  parseTrustedKeys,
  TrustedKeySet,
  TrustedKeysFileSchema,
} from './trusted-keys.js';
export type { VerifyLogOptions } from './verify-log.js';
export { verifyLog } from './verify-log.js';
export type { VerifyFailure, VerifyResult } from './verify-result.js';
export { VerifyFailureKind } from './verify-result.js';
