import { spawn } from 'node:child_process';
import { chmod, copyFile, cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  AuditLog,
  createHandoffEvent,
  type HandoffRecord,
  loadTrustedKeys,
  readSigningKeyFile,
  type Signer,
  type SigningKey,
  synthRecords,
  type TrustedKeySet,
} from '@baton/audit';
import { CLI } from '../../support/handoff-run.js';

/** Repository root. */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** The fixed test key and its trusted-keys file. */
export const FIXTURES = join(ROOT, 'test/fixtures/audit');
export const TRUSTED_KEYS = join(FIXTURES, 'trusted-keys.yaml');
/** The origin of the fixture trusted-keys file. */
export const ORIGIN = 'test.baton.dev/audit';

/** A fresh temp folder; remove it with {@link removeDir}. */
export function tempDir(prefix = 'baton-audit-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

/** Removes a folder made by {@link tempDir}. */
export function removeDir(dir: string): Promise<void> {
  return rm(dir, { recursive: true, force: true });
}

/** Copies the fixture private key into `dir` with mode 0600 (git does not keep modes) and returns its path. */
export async function fixtureKeyFile(dir: string): Promise<string> {
  const path = join(dir, 'test-signing.key');
  await copyFile(join(FIXTURES, 'test-signing.key'), path);
  await chmod(path, 0o600);
  return path;
}

/** The fixture signing key. */
export async function fixtureKey(dir: string): Promise<SigningKey> {
  return readSigningKeyFile(await fixtureKeyFile(dir));
}

/** The fixture trusted keys. */
export function fixtureTrustedKeys(): Promise<TrustedKeySet> {
  return loadTrustedKeys(TRUSTED_KEYS);
}

/** Appends `count` synthetic events to a log, `batch` per append. */
export async function writeLog(
  path: string,
  signer: Signer | readonly Signer[],
  count: number,
  options: { batch?: number; seed?: number; origin?: string; records?: HandoffRecord[] } = {},
): Promise<void> {
  const log = await AuditLog.open(path, { origin: options.origin ?? ORIGIN, signer });
  const records = options.records ?? [...synthRecords(count, { seed: options.seed ?? 1 })];
  const batch = options.batch ?? 10;
  for (let i = 0; i < records.length; i += batch) {
    await log.appendMany(await Promise.all(records.slice(i, i + batch).map((r) => createHandoffEvent(r, signer))));
  }
  await log.close();
}

/** Copies a log and its checkpoints folder (to tamper with the copy). */
export async function copyLog(from: string, to: string): Promise<void> {
  await cp(from, to);
  await cp(`${from}.checkpoints`, `${to}.checkpoints`, { recursive: true });
}

/** The log's lines (without the final empty string). */
export async function readLines(path: string): Promise<string[]> {
  const text = await readFile(path, 'utf8');
  return text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
}

/** Writes lines back as a log (each newline-terminated). */
export function writeLines(path: string, lines: readonly string[]): Promise<void> {
  return writeFile(path, lines.map((l) => `${l}\n`).join(''));
}

/** What a CLI run printed and how it ended. */
export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `baton <args>` as npm installs it (the package's bin, on the compiled dist). */
export function runCli(args: readonly string[], options: { timeoutMs?: number } = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 90_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Chromium flags for headless runs on a machine without a GPU or network. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** playwright-core, resolved from @baton/audit (its devDependency): the root has no copy of its own. */
export async function playwright(): Promise<typeof import('playwright-core')> {
  const require = createRequire(join(ROOT, 'packages/audit/package.json'));
  return import(pathToFileURL(require.resolve('playwright-core')).href);
}
