import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@baton/errors';

// Registry logins as `docker login`, cosign and crane find them: a Docker config file's credHelpers, credsStore and
// auths. baton only reads them, to fetch signatures; a login never reaches a log, an error or the audit event.

/** A registry login. Never logged: messages name where it came from, not what it is. */
export type RegistryLogin =
  | { readonly kind: 'basic'; readonly username: string; readonly password: string }
  /** An OAuth2 refresh token (`identitytoken`, or a helper's `<token>` user), exchanged at the token realm. */
  | { readonly kind: 'identity-token'; readonly token: string };

/** A login and where it was found (`/home/me/.docker/config.json (auths)`, `docker-credential-ecr-login`). */
export interface FoundLogin {
  readonly login: RegistryLogin;
  readonly source: string;
}

/** Finds the login for a registry host (`ghcr.io`, `mirror.internal:5000`), or none (anonymous). */
export interface RegistryCredentials {
  /** The Docker config read (for messages telling the operator where a login would go). */
  readonly file: string;
  /**
   * @throws {ConfigError} when the config cannot be parsed or a credential helper fails (naming the file or helper).
   */
  find(host: string): Promise<FoundLogin | undefined>;
}

/** Runs `docker-credential-<helper> get` with `host` on stdin; resolves its stdout, or undefined when it has none. */
export type CredentialHelperRunner = (helper: string, host: string) => Promise<string | undefined>;

/** Options of {@link dockerConfigCredentials}. */
export interface DockerConfigOptions {
  /** A Docker config.json to read (the plan's push.images.credentials): it must exist. */
  readonly file?: string;
  /** For DOCKER_CONFIG, HOME and the helpers' PATH. @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** @default runs the helper from PATH, 10 s at most */
  readonly runHelper?: CredentialHelperRunner;
}

interface DockerConfig {
  readonly auths?: Record<string, { auth?: string; username?: string; password?: string; identitytoken?: string }>;
  readonly credHelpers?: Record<string, string>;
  readonly credsStore?: string;
}

/** Docker Hub is spelled many ways; its logins live under the v1 index URL. */
const DOCKER_HUB = ['https://index.docker.io/v1/', 'index.docker.io', 'docker.io', 'registry-1.docker.io'];

/**
 * The logins of a Docker config: `file`, else `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json` (absent:
 * anonymous). For a host, as the Docker CLI: its `credHelpers` entry, else the `credsStore` helper, else `auths`.
 */
export function dockerConfigCredentials(options: DockerConfigOptions = {}): RegistryCredentials {
  const env = options.env ?? process.env;
  const file = options.file ?? join(env.DOCKER_CONFIG ?? join(env.HOME ?? homedir(), '.docker'), 'config.json');
  const runHelper = options.runHelper ?? defaultHelperRunner(env);
  let config: Promise<DockerConfig> | undefined;
  const load = () => {
    config ??= readConfig(file, options.file !== undefined);
    return config;
  };
  // One lookup per host: a helper is a process, and a push set's images share their registries.
  const found = new Map<string, Promise<FoundLogin | undefined>>();
  const lookup = async (host: string): Promise<FoundLogin | undefined> => {
    const c = await load();
    const names = aliases(host);
    const helper = names.map((n) => findKey(c.credHelpers, n)).find((h) => h !== undefined);
    if (helper) return fromHelper(runHelper, helper, host);
    if (c.credsStore) {
      const stored = await fromHelper(runHelper, c.credsStore, names.includes(DOCKER_HUB[0]!) ? DOCKER_HUB[0]! : host);
      if (stored) return stored;
    }
    for (const n of names) {
      const entry = findKey(c.auths, n);
      const login = entry && loginOf(entry, file, n);
      if (login) return { login, source: `${file} (auths)` };
    }
    return undefined;
  };
  return {
    file,
    find(host) {
      let f = found.get(host);
      if (!f) {
        f = lookup(host);
        found.set(host, f);
      }
      return f;
    },
  };
}

async function readConfig(file: string, explicit: boolean): Promise<DockerConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (!explicit && code === 'ENOENT') return {};
    throw new ConfigError(
      `push.images.credentials: cannot read ${file} (${code ?? (err as Error).message}); point it at a Docker config.json (what \`docker login\` writes)`,
      { cause: err },
    );
  }
  try {
    const parsed = JSON.parse(text) as unknown;
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
    return parsed as DockerConfig;
  } catch {
    // Never quote the file: it holds passwords.
    throw new ConfigError(
      `${file}: not a Docker config (not a JSON object); fix or remove it, or name another with push.images.credentials`,
    );
  }
}

/** The keys a host's login may be stored under. */
function aliases(host: string): string[] {
  const h = host.toLowerCase();
  return DOCKER_HUB.includes(h) ? DOCKER_HUB : [h];
}

/** The entry whose key, without scheme and path, is `host` (`https://ghcr.io`, `ghcr.io/v2/` and `ghcr.io` all are). */
function findKey<T>(map: Record<string, T> | undefined, host: string): T | undefined {
  if (!map) return undefined;
  if (host in map) return map[host];
  const bare = (k: string) =>
    k
      .toLowerCase()
      .replace(/^[a-z]+:\/\//, '')
      .replace(/\/.*$/, '');
  const key = Object.keys(map).find((k) => bare(k) === bare(host));
  return key === undefined ? undefined : map[key];
}

function loginOf(
  entry: NonNullable<DockerConfig['auths']>[string],
  file: string,
  host: string,
): RegistryLogin | undefined {
  if (entry.identitytoken) return { kind: 'identity-token', token: entry.identitytoken };
  if (entry.username && entry.password) return { kind: 'basic', username: entry.username, password: entry.password };
  if (!entry.auth) return undefined;
  const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0)
    throw new ConfigError(
      `${file}: auths.${host}.auth is not base64 of user:password; run \`docker login ${host}\` again`,
    );
  return { kind: 'basic', username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

async function fromHelper(run: CredentialHelperRunner, helper: string, host: string): Promise<FoundLogin | undefined> {
  const source = `docker-credential-${helper}`;
  const out = await run(helper, host);
  if (out === undefined) return undefined;
  let answer: { Username?: string; Secret?: string };
  try {
    answer = JSON.parse(out) as typeof answer;
  } catch {
    throw new ConfigError(`${source} get: answered something other than JSON for ${host}; check the helper`);
  }
  if (!answer.Secret) return undefined;
  const login: RegistryLogin =
    answer.Username === '<token>' || !answer.Username
      ? { kind: 'identity-token', token: answer.Secret }
      : { kind: 'basic', username: answer.Username, password: answer.Secret };
  return { login, source };
}

function defaultHelperRunner(env: NodeJS.ProcessEnv): CredentialHelperRunner {
  return (helper, host) =>
    new Promise((resolve, reject) => {
      const child = execFile(
        `docker-credential-${helper}`,
        ['get'],
        { env, timeout: 10_000, maxBuffer: 1 << 20 },
        (err, stdout) => {
          if (!err) return resolve(stdout);
          // The helpers' own way of saying "no login for this host".
          if (/credentials not found/i.test(stdout)) return resolve(undefined);
          const code = (err as NodeJS.ErrnoException).code;
          reject(
            new ConfigError(
              code === 'ENOENT'
                ? `docker-credential-${helper} is not on PATH, and the Docker config names it for ${host}; install it or remove it from the config`
                : `docker-credential-${helper} get failed for ${host} (${err.killed ? 'timed out after 10 s' : `exit ${String(err.code)}`}); run it by hand to see why`,
              { cause: err },
            ),
          );
        },
      );
      child.stdin?.end(host);
    });
}
