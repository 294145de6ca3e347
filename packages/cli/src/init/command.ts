import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { DEFAULT_HANDOFF_LOG_ORIGIN, parseHandoffPlan, readManifestDir, secretsReadByWorkloads } from '@baton/core';
import { ConfigError } from '@baton/errors';
import { Command } from '@commander-js/extra-typings';
import { parse, stringify } from 'yaml';
import { writeNewSigningKey } from '../audit/keygen.js';
import { planTemplate } from './plan-template.js';
import { renderPushSet, shippedProfileDir } from './render-push-set.js';

/**
 * `baton init`: a commented handoff plan on stdout that hands off as it stands once the pull credential file exists;
 * the push set rendered for the Git source (`<dir>/push`) and an audit signing key (`<dir>/audit`) beside it.
 */
export function initCommand() {
  return new Command('init')
    .description(
      'write a commented handoff plan to stdout, and beside it the push set rendered for your Git source and an audit key',
    )
    .requiredOption(
      '--profile <name>',
      'controller profile: baton-controller, flux, argocd (bootstrap-manifests/<name>)',
    )
    .requiredOption('--git-url <url>', 'repository the controller pulls from, without credentials')
    .option('--ref <ref>', 'branch the controller follows', 'main')
    .option('--path <path>', 'directory in the repository the controller applies (default: clusters/<name>)')
    .option('--name <cluster>', 'cluster name in the audit log and receipt', 'my-cluster')
    .option('--dir <dir>', 'where the plan will live: push/, git/ and audit/ are written here', '.')
    .option('--from <dir>', 'the profile folder to render (default: bootstrap-manifests/<profile> of this baton)')
    .action(async (o) => {
      const r = await initPlan(o);
      process.stdout.write(r.text);
      process.stderr.write(
        `baton: wrote the push set to ${r.pushDir}, what Git carries to ${r.gitDir} (commit it under the plan's pull.source.path) ` +
          `and the audit key to ${r.signingKeyPath}; save the plan in ${r.dir}, write the read-only Git credential to ${r.pullCredentialPath} (mode 0600), then run baton plan and baton up` +
          (r.pushSecretPaths.length > 0
            ? `; the Secrets the install reads are in ${r.pushSecretPaths.join(', ')} (random values, mode 0600)`
            : '') +
          '\n',
      );
    });
}

/** Options of {@link initPlan}: `baton init`'s flags. */
export interface InitOptions {
  readonly profile: string;
  readonly gitUrl: string;
  readonly ref: string;
  readonly path?: string;
  readonly name: string;
  readonly dir: string;
  readonly from?: string;
}

/**
 * Renders the push set into `<dir>/push` and what Git carries into `<dir>/git`, writes an audit key into `<dir>/audit` (unless one is there) and returns
 * the plan's text, validated as `baton up` would load it from `<dir>`. Writes nothing to stdout or stderr.
 * @throws {ConfigError} naming the flag when the profile is unknown, `<dir>/push` is not empty, or the plan is refused.
 */
export async function initPlan(o: InitOptions): Promise<InitResult> {
  if (/^[a-z]+:\/\/[^/]*@/.test(o.gitUrl))
    throw new ConfigError(
      `--git-url ${o.gitUrl.replace(/\/\/[^/]*@/, '//***@')} carries credentials; pass the URL without them and put the read-only credential in the pull credential file`,
    );
  const profileDir = o.from ? resolve(o.from) : shippedProfileDir(o.profile);
  if (!profileDir)
    throw new ConfigError(
      `--profile ${o.profile}: no bootstrap-manifests/${o.profile} found next to this baton; pass --from <the profile folder>`,
    );
  const dir = resolve(o.dir);
  const pushDir = resolve(dir, 'push');
  const gitDir = resolve(dir, 'git');
  for (const d of [pushDir, gitDir])
    if (existsSync(d) && readdirSync(d).length > 0)
      throw new ConfigError(`${d} is not empty; remove it or pass another --dir (init never overwrites a push set)`);
  const path = o.path ?? `clusters/${o.name}`;
  const { profile } = renderPushSet(profileDir, pushDir, { url: o.gitUrl, ref: o.ref, path }, gitDir);
  if (profile.name !== o.profile)
    throw new ConfigError(
      `--from ${profileDir} is profile ${profile.name}, not ${o.profile}; pass the matching --profile`,
    );
  const pushSecrets = writePushSecrets(
    dir,
    secretsReadByWorkloads(
      readManifestDir(pushDir).map((m) => m.object),
      profile.secretRefs,
    ).filter((x) => x.name !== profile.controller?.pullSecret),
  );
  const signingKeyPath = resolve(dir, 'audit', 'baton.key');
  // The trusted-keys file vouches for the log the plan writes: the plan's default origin, not keygen's.
  if (!existsSync(signingKeyPath))
    await writeNewSigningKey({ out: resolve(dir, 'audit'), name: 'baton', origin: DEFAULT_HANDOFF_LOG_ORIGIN });
  const rel = (p: string) => `./${relative(dir, p)}`;
  const text = planTemplate({
    profile,
    clusterName: o.name,
    url: o.gitUrl,
    ref: o.ref,
    path,
    manifests: rel(pushDir),
    signingKeyPath: rel(signingKeyPath),
    pullCredentialPath: './pull-credential.yaml',
    pushSecrets: pushSecrets.map((x) => ({ ...x, fromFile: rel(x.path) })),
  });
  parseHandoffPlan(parse(text, { version: '1.1' }), '<baton init>', dir);
  return {
    text,
    dir,
    pushDir,
    gitDir,
    signingKeyPath,
    pullCredentialPath: resolve(dir, 'pull-credential.yaml'),
    pushSecretPaths: pushSecrets.map((x) => x.path),
  };
}

/**
 * The Secrets the install's workloads read, as plan files beside the plan (mode 0600): each key the workloads read
 * gets a fresh random value, as upstream's own init containers generate them (Argo CD's redis password). A file that
 * exists is kept; a Secret read whole (no key known) is left for the user to write, and the plan says so.
 */
function writePushSecrets(
  dir: string,
  needed: readonly { name: string; keys: readonly string[] }[],
): { name: string; path: string; generated: boolean }[] {
  return needed.map(({ name, keys }) => {
    const path = resolve(dir, `${name}.yaml`);
    const generate = keys.length > 0 && !existsSync(path);
    if (generate)
      writeFileSync(path, stringify(Object.fromEntries(keys.map((k) => [k, randomBytes(24).toString('base64url')]))), {
        mode: 0o600,
      });
    return { name, path, generated: generate };
  });
}

/** What {@link initPlan} wrote, and the plan's text. */
export interface InitResult {
  /** The plan (YAML with comments). */
  readonly text: string;
  /** Where the plan belongs (its relative paths resolve here). */
  readonly dir: string;
  readonly pushDir: string;
  /** What Git carries (commit these under pull.source.path): the push set without its push-only objects. */
  readonly gitDir: string;
  readonly signingKeyPath: string;
  /** Where the plan expects the pull credential (not written: it is the user's secret). */
  readonly pullCredentialPath: string;
  /** The push-only Secrets the install's workloads read, as files the plan's push.secrets names. */
  readonly pushSecretPaths: readonly string[];
}
