import { type ChildProcessByStdio, execFile, spawn } from 'node:child_process';
import { timingSafeEqual } from 'node:crypto';
import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { promisify } from 'node:util';
import { ConfigError, ProcessError } from '@baton/errors';
import { freePorts } from './ports.js';

const execFileAsync = promisify(execFile);

/** One account of the test Git server (HTTP basic auth). */
export interface GitServerUser {
  readonly username: string;
  readonly password: string;
}

/** Options of {@link startGitServer}. */
export interface StartGitServerOptions {
  /** Accounts allowed to read (and push). @default one generated `baton` user */
  readonly users?: readonly GitServerUser[];
  /** Bearer tokens also accepted (`Authorization: Bearer <token>`), as Git hosts accept deploy tokens. @default [] */
  readonly tokens?: readonly string[];
  /** Path of the git executable. @default '/usr/bin/git' */
  readonly gitPath?: string;
  /**
   * Serve at the node address of a bed with a real node, for the Pods in it and the tests alike (a relay inside the
   * bed's namespace hands each connection to this server). @default loopback only
   */
  readonly inBed?: BedEndpoint;
}

/** Where a bed with a real node lets a host server be reached: its node address, and how to run a command in it. */
export interface BedEndpoint {
  readonly nodeIp: string;
  wrap(command: string, args: readonly string[]): { command: string; args: string[] };
}

/** A running smart-HTTP Git server on loopback; see {@link startGitServer}. */
export interface GitServer {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  /** The first user's credentials (what a pull-credential Secret would hold). */
  readonly credentials: GitServerUser;
  /** Folder holding the bare repositories and their working clones. */
  readonly dir: string;
  /** Clone URL of repository `name` (no credentials in it). */
  repoUrl(name: string): string;
  /** Creates an empty bare repository `name` with default branch `main`. @throws ConfigError if it exists. */
  createRepo(name: string): Promise<void>;
  /**
   * Writes (string) or deletes (null) files in repository `name` and commits them to `main`.
   * @returns the new commit's SHA.
   */
  commitFiles(name: string, files: Readonly<Record<string, string | null>>, message: string): Promise<string>;
  /**
   * Creates tag `tag` in repository `name` at `commit`: annotated (a tag object) when `message` is given, else
   * lightweight. @returns the object id the tag ref points to (the tag object's id when annotated).
   */
  createTag(name: string, tag: string, commit: string, message?: string): Promise<string>;
  /** Points branch `branch` of repository `name` at `commit` (created or moved), e.g. `dev/main`. */
  setBranch(name: string, branch: string, commit: string): Promise<void>;
  /** Number of HTTP requests answered so far, by status code (for tests of auth and polling). */
  readonly requestCounts: ReadonlyMap<number, number>;
  /** Stops the HTTP server, waits for in-flight backends, and deletes the repositories. */
  stop(): Promise<void>;
}

/**
 * Starts a real Git server for tests and the demo: bare repositories served over smart HTTP by
 * Debian's `git http-backend` (CGI) behind a loopback Node HTTP server with basic auth. Nothing
 * outlives {@link GitServer.stop}: each backend is a short-lived child of one request.
 * @throws ProcessError when git cannot be run.
 */
export async function startGitServer(options: StartGitServerOptions = {}): Promise<GitServer> {
  const git = options.gitPath ?? '/usr/bin/git';
  const users = options.users?.length
    ? [...options.users]
    : [{ username: 'baton', password: `pw-${process.pid}-${process.hrtime.bigint()}` }];
  const dir = await mkdtemp(join(tmpdir(), 'baton-git-'));
  const reposDir = join(dir, 'repos');
  const worksDir = join(dir, 'work');
  await mkdir(reposDir);
  await mkdir(worksDir);
  const counts = new Map<number, number>();
  const children = new Set<ReturnType<typeof spawn>>();
  const repos = new Set<string>();
  const queues = new Map<string, Promise<unknown>>();

  const runGit = async (args: readonly string[], cwd: string): Promise<string> => {
    try {
      const { stdout } = await execFileAsync(git, [...args], { cwd, env: gitEnv(), maxBuffer: 64 * 1024 * 1024 });
      return stdout.trim();
    } catch (err) {
      throw new ProcessError(`git ${args[0]} failed in ${cwd}: ${(err as Error).message}`, { cause: err });
    }
  };

  const count = (status: number) => counts.set(status, (counts.get(status) ?? 0) + 1);

  const tokens = options.tokens ?? [];
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const user = authorize(req.headers.authorization, users, tokens);
    if (!user) {
      count(401);
      res.writeHead(401, { 'www-authenticate': 'Basic realm="baton-git"', 'content-type': 'text/plain' });
      res.end('authentication required\n');
      return;
    }
    const child = spawn(git, ['http-backend'], { env: cgiEnv(req, reposDir, user), stdio: ['pipe', 'pipe', 'ignore'] });
    children.add(child);
    child.once('exit', () => children.delete(child));
    relayCgi(child, req, res, count);
  };

  const server: Server = createServer(handle);
  const relay = options.inBed ? await serveInBed(server, options.inBed, dir) : undefined;
  if (!relay) {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
  }
  const url = relay?.url ?? `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const createRepo = async (name: string) => {
    if (!/^[a-z0-9][a-z0-9._-]*$/.test(name))
      throw new ConfigError(
        `git server: repository name "${name}" is invalid; use lowercase letters, digits, '.', '_' and '-'`,
      );
    if (repos.has(name)) throw new ConfigError(`git server: repository "${name}" already exists; pick another name`);
    repos.add(name);
    const bare = join(reposDir, `${name}.git`);
    await runGit(['init', '--quiet', '--bare', '--initial-branch=main', bare], dir);
    await runGit(['config', 'http.receivepack', 'true'], bare);
    await runGit(['init', '--quiet', '--initial-branch=main', join(worksDir, name)], dir);
  };

  const commitOnce = async (name: string, files: Readonly<Record<string, string | null>>, message: string) => {
    const work = join(worksDir, name);
    for (const [path, content] of Object.entries(files)) {
      if (path.startsWith('/') || path.split('/').includes('..'))
        throw new ConfigError(`git server: file path "${path}" must be relative inside the repository`);
      const abs = join(work, path);
      if (content === null)
        await unlink(abs).catch((err: NodeJS.ErrnoException) =>
          err.code === 'ENOENT' ? undefined : Promise.reject(err),
        );
      else {
        await mkdir(dirname(abs), { recursive: true });
        await writeFile(abs, content);
      }
    }
    await runGit(['add', '--all'], work);
    await runGit(['commit', '--quiet', '--allow-empty', '-m', message], work);
    await runGit(['push', '--quiet', join(reposDir, `${name}.git`), 'HEAD:refs/heads/main'], work);
    return runGit(['rev-parse', 'HEAD'], work);
  };

  // Writes to one repository are serialised: git's index and ref locks would fail concurrent writers.
  const inRepo = async (name: string, fn: (bare: string) => Promise<string>): Promise<string> => {
    if (!repos.has(name))
      throw new ConfigError(`git server: repository "${name}" does not exist; call createRepo("${name}") first`);
    const prev = queues.get(name) ?? Promise.resolve();
    const next = prev.catch(() => undefined).then(() => fn(join(reposDir, `${name}.git`)));
    queues.set(name, next);
    return next;
  };

  return {
    url,
    credentials: users[0]!,
    dir,
    requestCounts: counts,
    repoUrl: (name) => `${url}/${name}.git`,
    createRepo,
    commitFiles: (name, files, message) => inRepo(name, () => commitOnce(name, files, message)),
    createTag: (name, tag, commit, message) =>
      inRepo(name, async (bare) => {
        await runGit(['tag', ...(message === undefined ? [] : ['-a', '-m', message]), '--', tag, commit], bare);
        return runGit(['rev-parse', `refs/tags/${tag}`], bare);
      }),
    setBranch: async (name, branch, commit) => {
      await inRepo(name, (bare) => runGit(['update-ref', `refs/heads/${branch}`, commit], bare));
    },
    async stop() {
      await relay?.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      for (const c of children) c.kill('SIGKILL');
      await Promise.all(
        [...children].map(
          (c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(undefined) : c.once('exit', r))),
        ),
      );
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Listens on a unix socket in `dir` and starts the relay (bin/bed-forward.mjs) inside the bed's namespace on a free
 * port of the node address. @throws ProcessError when the relay does not come up.
 */
async function serveInBed(
  server: Server,
  bed: BedEndpoint,
  dir: string,
): Promise<{ url: string; stop(): Promise<void> }> {
  const socket = join(dir, 'http.sock');
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, resolve);
  });
  for (let attempt = 1; ; attempt++) {
    const [port] = await freePorts(1);
    const line = bed.wrap(process.execPath, [BED_FORWARD_SCRIPT, bed.nodeIp, String(port), socket]);
    const relay = spawn(line.command, line.args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const up = await new Promise<string | true>((resolve) => {
      let err = '';
      relay.stderr.on('data', (d: Buffer) => {
        err += d.toString();
      });
      relay.stdout.once('data', () => resolve(true));
      relay.once('exit', (code) => resolve(`exited with code ${code}: ${err.trim()}`));
    });
    if (up === true) {
      return {
        url: `http://${bed.nodeIp}:${port}`,
        stop: () =>
          new Promise<void>((resolve) => {
            if (relay.exitCode !== null || relay.signalCode !== null) return resolve();
            relay.once('exit', () => resolve());
            relay.kill('SIGTERM');
          }),
      };
    }
    if (!/EADDRINUSE/.test(up) || attempt >= 3)
      throw new ProcessError(`git server: the relay into the bed at ${bed.nodeIp}:${port} ${up}`);
  }
}

const BED_FORWARD_SCRIPT = new URL('../bin/bed-forward.mjs', import.meta.url).pathname;

function gitEnv(): NodeJS.ProcessEnv {
  // Commits must not depend on the user's ~/.gitconfig (identity, hooks, signing).
  return {
    PATH: process.env.PATH,
    HOME: tmpdir(),
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_AUTHOR_NAME: 'baton test',
    GIT_AUTHOR_EMAIL: 'test@baton.invalid',
    GIT_COMMITTER_NAME: 'baton test',
    GIT_COMMITTER_EMAIL: 'test@baton.invalid',
  };
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Who an Authorization header names: a configured user, `token` for a known bearer token, or nobody. */
function authorize(
  header: string | undefined,
  users: readonly GitServerUser[],
  tokens: readonly string[],
): string | undefined {
  if (header?.startsWith('Bearer ')) {
    const t = header.slice(7);
    return tokens.some((x) => safeEqual(x, t)) ? 'token' : undefined;
  }
  if (!header?.startsWith('Basic ')) return undefined;
  const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  const [u, p] = [decoded.slice(0, i), decoded.slice(i + 1)];
  return users.find((x) => x.username === u && safeEqual(x.password, p))?.username;
}

/** The CGI environment of one `git http-backend` run for `req`. */
function cgiEnv(req: IncomingMessage, reposDir: string, user: string): NodeJS.ProcessEnv {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    GIT_PROJECT_ROOT: reposDir,
    GIT_HTTP_EXPORT_ALL: '1',
    GIT_HTTP_MAX_REQUEST_BUFFER: '100M',
    REQUEST_METHOD: req.method ?? 'GET',
    PATH_INFO: decodeURIComponent(url.pathname),
    QUERY_STRING: url.search.replace(/^\?/, ''),
    CONTENT_TYPE: req.headers['content-type'] ?? '',
    REMOTE_USER: user,
    REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
    GIT_PROTOCOL: (req.headers['git-protocol'] as string | undefined) ?? '',
    HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
  };
  if (req.headers['content-length']) env.CONTENT_LENGTH = req.headers['content-length'];
  return env;
}

/**
 * Pipes the request body into a CGI child and its output back as the response: headers (with `Status:`), a
 * blank line, then the body, which streams through unchanged. `count` tallies the status sent.
 */
function relayCgi(
  child: ChildProcessByStdio<Writable, Readable, null>,
  req: IncomingMessage,
  res: ServerResponse,
  count: (status: number) => void,
): void {
  child.once('error', () => {
    if (!res.headersSent) {
      count(500);
      res.writeHead(500).end();
    }
  });
  req.pipe(child.stdin);
  child.stdin.on('error', () => {});
  let head: Buffer | undefined = Buffer.alloc(0);
  child.stdout.on('data', (chunk: Buffer) => {
    if (!head) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const parsed = parseCgiHead(head);
    if (!parsed) return;
    count(parsed.status);
    res.writeHead(parsed.status, parsed.headers);
    res.write(head.subarray(parsed.bodyStart));
    head = undefined;
  });
  child.stdout.on('end', () => {
    if (head) {
      count(502);
      res.writeHead(502).end('git http-backend produced no response\n');
    } else res.end();
  });
}

/** The status and headers of CGI output, and where its body starts; undefined while the blank line is not in yet. */
function parseCgiHead(
  head: Buffer,
): { status: number; headers: Record<string, string>; bodyStart: number } | undefined {
  const crlf = head.indexOf('\r\n\r\n');
  const lf = head.indexOf('\n\n');
  const [end, len] = crlf >= 0 ? [crlf, 4] : lf >= 0 ? [lf, 2] : [-1, 0];
  if (end < 0) return undefined;
  let status = 200;
  const headers: Record<string, string> = {};
  for (const line of head.subarray(0, end).toString('latin1').split(/\r?\n/)) {
    const c = line.indexOf(':');
    if (c < 0) continue;
    const k = line.slice(0, c).trim();
    const v = line.slice(c + 1).trim();
    if (k.toLowerCase() === 'status') status = Number.parseInt(v, 10);
    else headers[k] = v;
  }
  return { status, headers, bodyStart: end + len };
}
