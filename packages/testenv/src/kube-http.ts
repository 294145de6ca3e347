import { readFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { parse } from 'yaml';

/** Where and how to reach an apiserver with a client certificate or a bearer token. */
export interface KubeHttpTarget {
  readonly server: string;
  readonly caPem: string;
  readonly certPem?: string;
  readonly keyPem?: string;
  readonly bearerToken?: string;
}

/** A decoded response: status and JSON body (or raw text when not JSON). */
export interface KubeHttpResponse {
  readonly status: number;
  readonly body: unknown;
}

/**
 * The few raw HTTPS calls testenv itself needs (readiness probes, node registration). Deliberately tiny:
 * the control plane must be usable before, and independent of, any Kubernetes client library.
 */
export class KubeHttp {
  private readonly agent: Agent;
  private readonly target: KubeHttpTarget;

  constructor(target: KubeHttpTarget) {
    this.target = target;
    this.agent = new Agent({
      ca: target.caPem,
      ...(target.certPem ? { cert: target.certPem } : {}),
      ...(target.keyPem ? { key: target.keyPem } : {}),
      keepAlive: true,
      maxSockets: 4,
    });
  }

  /** A client for the current context of a client-certificate kubeconfig (as testenv writes them). */
  static async fromKubeconfig(path: string): Promise<KubeHttp> {
    const kc = parse(await readFile(path, 'utf8')) as {
      clusters: { cluster: Record<string, string> }[];
      users: { user: Record<string, string> }[];
    };
    const b64 = (s: string | undefined) => Buffer.from(s ?? '', 'base64').toString('utf8');
    return new KubeHttp({
      server: kc.clusters[0]?.cluster.server ?? '',
      caPem: b64(kc.clusters[0]?.cluster['certificate-authority-data']),
      certPem: b64(kc.users[0]?.user['client-certificate-data']),
      keyPem: b64(kc.users[0]?.user['client-key-data']),
    });
  }

  /**
   * One request; never throws on HTTP status, only on transport errors or `timeoutMs`. `contentType` is the body's
   * (a merge patch: `application/merge-patch+json`).
   */
  request(
    method: string,
    path: string,
    body?: unknown,
    timeoutMs = 5_000,
    contentType = 'application/json',
  ): Promise<KubeHttpResponse> {
    const url = new URL(path, this.target.server);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        url,
        {
          method,
          agent: this.agent,
          timeout: timeoutMs,
          headers: {
            accept: 'application/json',
            ...(payload ? { 'content-type': contentType } : {}),
            ...(this.target.bearerToken ? { authorization: `Bearer ${this.target.bearerToken}` } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            try {
              parsed = JSON.parse(text);
            } catch {}
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${url.pathname} timed out after ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Closes idle keep-alive sockets. */
  close(): void {
    this.agent.destroy();
  }
}
