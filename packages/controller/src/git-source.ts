import { execFile } from 'node:child_process';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { BatonError, ErrorCode } from '@baton/errors';

/** A pull credential as read from the GitSync's Secret. Never logged; log its fingerprint. */
export type GitAuth = { readonly username: string; readonly password: string } | { readonly bearerToken: string };

/** What to fetch. */
export interface FetchOptions {
  /** Repository URL (https://, http:// or file://), without credentials. */
  readonly url: string;
  /** Exactly one of branch, tag or commit. */
  readonly ref: {
    readonly branch?: string | undefined;
    readonly tag?: string | undefined;
    readonly commit?: string | undefined;
  };
  /** A folder the fetcher owns; reused across syncs so a fetch only transfers new objects. */
  readonly workDir: string;
  readonly auth?: GitAuth | undefined;
  readonly signal?: AbortSignal;
  /** Deadline of one git command. @default 60_000 */
  readonly timeoutMs?: number;
}

/** The outcome of a fetch: the commit and the folder holding its files. */
export interface FetchedRevision {
  /** The commit SHA that was checked out. */
  readonly revision: string;
  /** The checked-out tree (contains `.git`, which rendering skips). */
  readonly dir: string;
}

/** Why a fetch failed, for the `Stalled`/`Ready` reason. */
export const GitFailure = {
  authentication: 'AuthenticationFailed',
  notFound: 'RefNotFound',
  unreachable: 'GitOperationFailed',
} as const;
export type GitFailure = (typeof GitFailure)[keyof typeof GitFailure];

/** A fetch failed; `reason` says whether retrying can help. */
export class GitFetchError extends BatonError {
  /** Classified cause. */
  readonly reason: GitFailure;
  constructor(reason: GitFailure, message: string, options: { cause?: unknown } = {}) {
    super(ErrorCode.process, message, { ...options, details: { reason } });
    this.reason = reason;
  }
}

/**
 * Fetches exactly one ref, shallowly (`--depth 1`), with the git CLI, and checks it out: a branch is
 * `refs/heads/<branch>` exactly, a tag `refs/tags/<tag>` (an annotated tag checks out the commit it
 * tags, which `revision` then is), a commit its full id. The
 * credential travels in the environment (`GIT_CONFIG_COUNT` + `http.extraHeader`), never in argv
 * or the URL, so it cannot show in `ps` or in git's error messages.
 * @throws GitFetchError with a classified reason and a message that names the URL and ref.
 */
export async function fetchRevision(options: FetchOptions, gitPath = 'git'): Promise<FetchedRevision> {
  const dir = options.workDir;
  await mkdir(dir, { recursive: true });
  const hasRepo = await stat(join(dir, '.git')).then(
    () => true,
    () => false,
  );
  const env = gitEnv(options.auth, dir);
  const run = (args: string[]) => runGit(gitPath, args, dir, env, options);
  if (!hasRepo) await run(['init', '--quiet', '--initial-branch=main', '.']);
  const { branch, tag, commit } = options.ref;
  const refspec = branch ? `refs/heads/${branch}` : tag ? `refs/tags/${tag}` : commit!;
  const what = branch ? `branch ${branch}` : tag ? `tag ${tag}` : `commit ${commit}`;
  try {
    await run([
      'fetch',
      '--quiet',
      '--depth',
      '1',
      '--no-tags',
      '--no-write-fetch-head',
      // A URL that begins with "-" must stay a repository, never become an option (--upload-pack=...).
      '--',
      options.url,
      `+${refspec}:refs/baton/target`,
    ]);
  } catch (err) {
    const text = (err as { stderr?: string }).stderr ?? (err as Error).message;
    throw classify(text, options.url, what, err);
  }
  await run(['checkout', '--quiet', '--force', '--detach', 'refs/baton/target']);
  await run(['clean', '--quiet', '-ffdx']);
  const revision = (await run(['rev-parse', 'HEAD'])).trim();
  return { revision, dir };
}

function classify(stderr: string, url: string, what: string, cause: unknown): GitFetchError {
  const line = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(-2)
    .join('; ');
  if (/Authentication failed|could not read Username|terminal prompts disabled|401|403/i.test(stderr)) {
    return new GitFetchError(
      GitFailure.authentication,
      `git fetch ${url} (${what}) was refused: authentication failed; check the pull-credential Secret (username/password or bearerToken) and that it may read the repository`,
      { cause },
    );
  }
  if (/couldn't find remote ref|not our ref|no such ref|unadvertised object/i.test(stderr)) {
    return new GitFetchError(
      GitFailure.notFound,
      `git fetch ${url}: ${what} does not exist; fix spec.ref of the GitSync`,
      { cause },
    );
  }
  return new GitFetchError(
    GitFailure.unreachable,
    `git fetch ${url} (${what}) failed: ${line || 'unknown error'}; check spec.url and network access to the Git server`,
    { cause },
  );
}

function gitEnv(auth: GitAuth | undefined, dir: string): NodeJS.ProcessEnv {
  const cfg: [string, string][] = [
    // file:// sources are a feature here (local use), not an attack surface.
    ['protocol.file.allow', 'always'],
    ['safe.directory', dir],
    ['advice.detachedHead', 'false'],
  ];
  if (auth) {
    const header =
      'bearerToken' in auth
        ? `Bearer ${auth.bearerToken}`
        : `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
    cfg.push(['http.extraHeader', `Authorization: ${header}`]);
  }
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    // A read-only root filesystem has a writable /tmp (emptyDir) and nothing else.
    HOME: dir,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '/bin/false',
    GIT_CONFIG_COUNT: String(cfg.length),
  };
  cfg.forEach(([k, v], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = k;
    env[`GIT_CONFIG_VALUE_${i}`] = v;
  });
  return env;
}

function runGit(
  git: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  options: FetchOptions,
): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      git,
      args,
      {
        cwd,
        env,
        timeout: options.timeoutMs ?? 60_000,
        maxBuffer: 16 * 1024 * 1024,
        killSignal: 'SIGKILL',
        ...(options.signal ? { signal: options.signal } : {}),
      },
      (err, stdout, stderr) => {
        if (err) {
          reject(
            Object.assign(
              new GitFetchError(
                GitFailure.unreachable,
                `git ${args[0]} failed in ${cwd}: ${stderr.trim().split('\n').slice(-1)[0] ?? err.message}`,
                { cause: err },
              ),
              { stderr },
            ),
          );
        } else resolve(stdout);
      },
    );
  });
}
