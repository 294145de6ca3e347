// One exchange with the API server over HTTPS: a request and its whole response, or a watch's stream of events; and
// the KubeApiError a failed response becomes. The client that builds paths and bodies is ./rest-client.ts.
import type { IncomingMessage } from 'node:http';
import { type RequestOptions, request } from 'node:https';
import { KubeApiError } from '@baton/errors';

/** A Kubernetes object as the REST client handles it: only the header is typed. */
export interface RestObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    resourceVersion?: string;
    uid?: string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    managedFields?: { manager?: string; operation?: string }[];
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

/** How to reach the apiserver: a server URL, its CA, and a client certificate or a bearer token. */
/** The response of one call that did not throw. */
export interface KubeResponse<T = unknown> {
  readonly status: number;
  readonly body: T;
}

/** The HTTP status of a KubeApiError (0 for anything else). */
export function statusOfError(err: unknown): number {
  const s = (err as { details?: { status?: unknown } } | undefined)?.details?.status;
  return typeof s === 'number' ? s : 0;
}

export function apiError(method: string, path: string, res: KubeResponse): KubeApiError {
  const b = res.body as { message?: string; reason?: string } | string;
  const msg = typeof b === 'object' && b?.message ? b.message : String(b).slice(0, 300);
  // `apiMessage` lets `toKubeApiError` name the caller's operation instead of the path.
  return new KubeApiError(`${method} ${path.split('?')[0]} returned ${res.status}: ${msg}`, {
    details: { status: res.status, reason: typeof b === 'object' ? b?.reason : undefined, apiMessage: msg },
  });
}

/** A response's whole body, parsed when it is JSON. */
export function readBody(res: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      try {
        resolve(JSON.parse(text));
      } catch {
        resolve(text);
      }
    });
    res.on('error', reject);
  });
}

/** One event of a watch stream. */
export interface WatchEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  /** The object (for `ERROR`, a Status with `code`). */
  readonly object: RestObject & { code?: number; message?: string };
}

/** Reads a watch's newline-delimited JSON events until the stream ends. */
export function stream(
  url: URL,
  options: RequestOptions,
  signal: AbortSignal | undefined,
  onEvent: (event: WatchEvent) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ...options, ...(signal ? { signal } : {}) }, (res) => {
      if (res.statusCode !== 200) {
        readBody(res).then(
          (body) => reject(apiError('GET', url.pathname, { status: res.statusCode ?? 0, body })),
          reject,
        );
        return;
      }
      let buffered = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffered += chunk;
        for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
          const line = buffered.slice(0, nl).trim();
          buffered = buffered.slice(nl + 1);
          if (!line) continue;
          try {
            onEvent(JSON.parse(line) as WatchEvent);
          } catch (err) {
            req.destroy(err as Error);
            return;
          }
        }
      });
      res.on('end', () => resolve());
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Sends one request; resolves with the status and the body (parsed when JSON) for every HTTP status. */
export function send(
  url: URL,
  options: RequestOptions,
  payload: string | undefined,
  signal: AbortSignal,
): Promise<KubeResponse> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ...options, signal }, (res) => {
      readBody(res).then((body) => resolve({ status: res.statusCode ?? 0, body }), reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}
