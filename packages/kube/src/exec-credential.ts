import { spawn } from 'node:child_process';
import type { RequestOptions } from 'node:https';
import { isAbsolute, join } from 'node:path';
import { ConfigError } from '@baton/errors';
import type * as k8s from '@kubernetes/client-node';

/** The `exec` block of a kubeconfig user, as `aws eks get-token`, `gke-gcloud-auth-plugin` and `kubelogin` write it. */
export interface ExecConfig {
  readonly apiVersion?: string;
  readonly command: string;
  readonly args?: readonly string[] | null;
  readonly env?: readonly { readonly name: string; readonly value: string }[] | null;
  readonly installHint?: string;
  readonly provideClusterInfo?: boolean;
  readonly interactiveMode?: 'Never' | 'IfAvailable' | 'Always';
}

/** What a plugin prints: `client.authentication.k8s.io/v1` or `v1beta1` ExecCredential. */
interface ExecCredential {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly status?: {
    readonly token?: string;
    readonly clientCertificateData?: string;
    readonly clientKeyData?: string;
    readonly expirationTimestamp?: string;
  };
}

interface Cached {
  readonly status: NonNullable<ExecCredential['status']>;
  /**
   * Milliseconds since the epoch; Infinity when the plugin gave no expiry: kept until a request with it is answered
   * 401 (see {@link ExecCredentialAuth.unauthorized}).
   */
  readonly expiresAt: number;
}

/** A credential this close to its expiry is fetched again: a request sent just before expiry can arrive just after. */
const EXPIRY_MARGIN_MS = 10_000;
const API_VERSIONS = ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'];
/** How long a plugin may run before baton gives up on it. */
const PLUGIN_TIMEOUT_MS = 120_000;

/**
 * Runs a kubeconfig user's exec credential plugin the way client-go does, filling what @kubernetes/client-node 1.4.0
 * leaves out: `KUBERNETES_EXEC_INFO` (with the cluster when `provideClusterInfo`), `installHint` when the command is
 * missing, a relative command resolved against the kubeconfig's folder, one run shared by concurrent requests, a
 * credential without expiry kept, one that expires fetched again before it does, one the API server answers 401
 * dropped so the plugin runs again (client-go does the same: a token revoked or rotated before its stated expiry), and
 * errors that name the command but never the plugin's output (it holds the credential).
 */
export class ExecCredentialAuth {
  private readonly cache = new Map<string, Promise<Cached>>();
  /** What each run gave, once it has: {@link unauthorized} answers without waiting. */
  private readonly settled = new WeakMap<Promise<Cached>, Cached>();

  /**
   * @param cluster the cluster the credential is for (sent to the plugin when it asks with `provideClusterInfo`).
   * @param baseDir folder a relative command path is resolved against (the kubeconfig's), as kubectl does.
   */
  constructor(
    private readonly cluster: () => k8s.Cluster | null,
    private readonly baseDir?: string,
    private readonly now: () => number = Date.now,
  ) {}

  isAuthProvider(user: k8s.User): boolean {
    return Boolean(user.exec);
  }

  async applyAuthentication(user: k8s.User, opts: RequestOptions): Promise<void> {
    const { status } = await this.credential(user);
    if (status.clientCertificateData && status.clientKeyData) {
      opts.cert = status.clientCertificateData;
      opts.key = status.clientKeyData;
    }
    if (status.token) {
      opts.headers = {
        ...(opts.headers as Record<string, string> | undefined),
        Authorization: `Bearer ${status.token}`,
      };
    }
  }

  /**
   * After a request as `userName` was answered 401: drops the credential it carried (`sent`: the bearer token or
   * client certificate, when known; unknown means the cached one), unless a newer one has replaced it already.
   * @returns true when `userName`'s credential comes from a plugin, so the request may be sent once more with a fresh
   * one; false for every other kind of user (a 401 then stands).
   */
  unauthorized(userName: string, sent?: { readonly token?: string; readonly cert?: string }): boolean {
    const held = this.cache.get(userName);
    if (!held) return false;
    const settled = this.settled.get(held);
    // Still running: the next request waits for that fresh credential.
    if (!settled) return true;
    const same =
      !sent ||
      (sent.token !== undefined && sent.token === settled.status.token) ||
      (sent.cert !== undefined && sent.cert === settled.status.clientCertificateData);
    if (same) this.cache.delete(userName);
    return true;
  }

  /** The user's credential: the cached one while it is valid, else a fresh run of the plugin (one per user at a time). */
  private async credential(user: k8s.User): Promise<Cached> {
    const held = this.cache.get(user.name);
    if (held) {
      const c = await held.catch(() => undefined);
      if (c && c.expiresAt - EXPIRY_MARGIN_MS > this.now()) return c;
      if (this.cache.get(user.name) !== held) return this.credential(user);
    }
    const fresh = this.run(user);
    this.cache.set(user.name, fresh);
    fresh
      .then((c) => this.settled.set(fresh, c))
      .catch(() => {
        if (this.cache.get(user.name) === fresh) this.cache.delete(user.name);
      });
    return fresh;
  }

  private async run(user: k8s.User): Promise<Cached> {
    const exec = user.exec as ExecConfig;
    const where = `kubeconfig user "${user.name}"`;
    if (!exec.command)
      throw new ConfigError(`${where} has an exec block without a command; set users[].user.exec.command`);
    const apiVersion = exec.apiVersion ?? 'client.authentication.k8s.io/v1beta1';
    if (!API_VERSIONS.includes(apiVersion))
      throw new ConfigError(
        `${where} asks for exec credential ${apiVersion}; baton runs ${API_VERSIONS.join(' and ')}: update the plugin and its kubeconfig entry`,
      );
    if (exec.interactiveMode === 'Always')
      throw new ConfigError(
        `${where} runs "${exec.command}" with interactiveMode Always, but baton runs plugins without a terminal; log in with the plugin first, or set interactiveMode to IfAvailable or Never`,
      );
    const command =
      this.baseDir && exec.command.includes('/') && !isAbsolute(exec.command)
        ? join(this.baseDir, exec.command)
        : exec.command;
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const e of exec.env ?? []) env[e.name] = e.value;
    env.KUBERNETES_EXEC_INFO = JSON.stringify(this.execInfo(apiVersion, exec.provideClusterInfo === true));

    const { code, stdout, stderr, error } = await runPlugin(command, [...(exec.args ?? [])], env);
    const named = `${where}'s credential plugin \`${exec.command}\``;
    if (error && (error as NodeJS.ErrnoException).code === 'ENOENT')
      throw new ConfigError(
        `${named} was not found${exec.command.includes('/') ? ` at ${command}` : ' on PATH'}; install it${exec.installHint ? `: ${exec.installHint.trim()}` : ' (the kubeconfig gives no installHint)'}`,
      );
    if (error) throw new ConfigError(`${named} could not run: ${error.message}`);
    if (code !== 0)
      throw new ConfigError(
        `${named} exited with ${code}${stderr.trim() ? `: ${lastLines(stderr)}` : ''}; run it by hand to see why (log in again?)`,
      );
    return parseCredential(stdout, apiVersion, named, this.now());
  }

  /** What client-go passes in KUBERNETES_EXEC_INFO: never interactive here; the cluster only when asked for. */
  private execInfo(apiVersion: string, provideClusterInfo: boolean): object {
    const c = provideClusterInfo ? this.cluster() : null;
    return {
      apiVersion,
      kind: 'ExecCredential',
      spec: {
        interactive: false,
        ...(c
          ? {
              cluster: {
                server: c.server,
                ...(c.tlsServerName ? { 'tls-server-name': c.tlsServerName } : {}),
                ...(c.skipTLSVerify ? { 'insecure-skip-tls-verify': true } : {}),
                ...(c.caData ? { 'certificate-authority-data': c.caData } : {}),
                ...(c.proxyUrl ? { 'proxy-url': c.proxyUrl } : {}),
              },
            }
          : {}),
      },
    };
  }
}

function parseCredential(stdout: string, apiVersion: string, named: string, now: number): Cached {
  let cred: ExecCredential;
  try {
    cred = JSON.parse(stdout) as ExecCredential;
  } catch {
    // The output is not quoted: it may hold a credential.
    throw new ConfigError(`${named} printed something that is not an ExecCredential JSON object (output not shown)`);
  }
  if (cred?.kind !== 'ExecCredential' || cred.apiVersion !== apiVersion)
    throw new ConfigError(
      `${named} printed kind ${String(cred?.kind)} apiVersion ${String(cred?.apiVersion)}, but the kubeconfig asks for ExecCredential ${apiVersion}; make the exec apiVersion match the plugin`,
    );
  const status = cred.status;
  const hasCert = Boolean(status?.clientCertificateData && status.clientKeyData);
  if (!status || (!status.token && !hasCert))
    throw new ConfigError(
      `${named} printed an ExecCredential without status.token or status.clientCertificateData and clientKeyData`,
    );
  let expiresAt = Number.POSITIVE_INFINITY;
  if (status.expirationTimestamp) {
    expiresAt = Date.parse(status.expirationTimestamp);
    if (Number.isNaN(expiresAt))
      throw new ConfigError(
        `${named} printed status.expirationTimestamp "${status.expirationTimestamp}", which is not an RFC 3339 time`,
      );
    if (expiresAt <= now)
      throw new ConfigError(
        `${named} printed a credential that expired at ${status.expirationTimestamp}; check the clock and log in again`,
      );
  }
  return { status, expiresAt };
}

function lastLines(text: string): string {
  return text.trim().split('\n').slice(-5).join(' / ').slice(0, 600);
}

function runPlugin(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string; error?: Error }> {
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let error: Error | undefined;
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    // Our own timer, not spawn's `timeout`: Node leaves that one pending when the command never started (ENOENT),
    // which kept `baton up` alive for the whole 120 s after it had already failed.
    const timer = setTimeout(() => child.kill('SIGKILL'), PLUGIN_TIMEOUT_MS);
    const done = (r: { code: number | null; stdout: string; stderr: string; error?: Error }) => {
      clearTimeout(timer);
      resolve(r);
    };
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.on('error', (e) => {
      error = e;
      // A command that never started emits no 'close' on every Node version.
      if (child.pid === undefined) done({ code: null, stdout, stderr, error });
    });
    child.on('close', (code) => done({ code, stdout, stderr, ...(error ? { error } : {}) }));
  });
}
