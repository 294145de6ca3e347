import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ConfigError } from '@baton/errors';

const execFileAsync = promisify(execFile);

/** Basic-auth credentials for a Git server; passed through the environment, never argv or the URL. */
export interface GitAuth {
  readonly username: string;
  readonly password: string;
}

/** A full commit id (SHA-1 or SHA-256 repositories). */
const COMMIT_ID = /^([0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * Parses `git ls-remote` output into ref name → object id. Peeled tags keep their `^{}` suffix
 * (`refs/tags/v1^{}` is the commit an annotated tag points to).
 */
export function parseLsRemote(stdout: string): Map<string, string> {
  const refs = new Map<string, string>();
  for (const line of stdout.split('\n')) {
    const tab = line.indexOf('\t');
    if (tab < 0) continue;
    const sha = line.slice(0, tab).trim();
    const name = line.slice(tab + 1).trim();
    if (COMMIT_ID.test(sha) && name) refs.set(name, sha);
  }
  return refs;
}

/** The ref names `ref` may mean, in the order they are tried: the full ref as given, a branch, a tag. */
export function refCandidates(ref: string): string[] {
  const full = ref === 'HEAD' || ref.startsWith('refs/') ? [ref] : [];
  return [...full, `refs/heads/${ref}`, `refs/tags/${ref}`];
}

/** How `ref` resolved: the commit, and the ref that gave it (undefined when `ref` was a commit id itself). */
export interface ResolvedRef {
  readonly commit: string;
  readonly ref: string | undefined;
}

/**
 * Picks the commit `ref` names among listed refs, by exact name only (`main` never matches
 * `refs/heads/dev/main`): the full ref as given, then `refs/heads/<ref>`, then `refs/tags/<ref>`
 * (an annotated tag resolves to the commit it points to, its `^{}` line), then `ref` itself when it
 * is a full commit id.
 * @returns undefined when nothing matches.
 */
export function pickRevision(refs: ReadonlyMap<string, string>, ref: string): ResolvedRef | undefined {
  for (const name of refCandidates(ref)) {
    const sha = refs.get(`${name}^{}`) ?? refs.get(name);
    if (sha) return { commit: sha, ref: name };
  }
  return COMMIT_ID.test(ref) ? { commit: ref, ref: undefined } : undefined;
}

/**
 * Resolves `ref` of the repository at `url` to a commit id with `git ls-remote` (see {@link pickRevision} for the
 * order). The URL follows `--`, so a URL that begins with `-` is a repository path, never an option.
 * @throws {ConfigError} naming the URL and ref when git fails or the ref does not exist.
 */
export async function resolveGitRevision(
  source: { readonly url: string; readonly ref: string },
  auth?: GitAuth,
  gitPath = 'git',
): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env, GIT_TERMINAL_PROMPT: '0' };
  if (auth) {
    const basic = Buffer.from(`${auth.username}:${auth.password}`).toString('base64');
    Object.assign(env, {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
    });
  }
  // Patterns only narrow what the server lists (they match the tail of a name); the pick is exact.
  const patterns = refCandidates(source.ref).flatMap((name) => [name, `${name}^{}`]);
  let stdout: string;
  try {
    ({ stdout } = await execFileAsync(gitPath, ['ls-remote', '--', source.url, ...patterns], { env }));
  } catch (err) {
    // git's message may quote the request; keep only its first line, which names the URL, never the header.
    const first = ((err as { stderr?: string }).stderr ?? '').split('\n')[0] ?? '';
    throw new ConfigError(
      `cannot resolve ${source.ref} of ${source.url}: ${first}; check pull.source or pin pull.source.revision`,
      { cause: err },
    );
  }
  const picked = pickRevision(parseLsRemote(stdout), source.ref);
  if (!picked) {
    throw new ConfigError(
      `${source.url} has no ref ${source.ref} (looked for ${refCandidates(source.ref).join(', ')}); ` +
        'check pull.source.ref (a branch, a tag or a full ref name) or pin pull.source.revision',
    );
  }
  return picked.commit;
}
