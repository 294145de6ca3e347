import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Metrics } from './metrics.js';

/** Path of the HMAC-verified webhook that triggers a sync. */
export const WEBHOOK_PATH = '/webhook';

/** A webhook body larger than this is refused (413) before its signature is checked. */
const MAX_WEBHOOK_BYTES = 1024 * 1024;

/** What the HTTP routes ask of the controller. */
export interface HttpRoutesDeps {
  readonly log: Logger;
  readonly metrics: Metrics;
  /** Answer of `/readyz`. */
  isReady(): boolean;
  /** Whether this replica holds the Lease (a standby refuses webhook calls with 503). */
  isLeader(): boolean;
  /** The webhook HMAC key; `undefined` when the GitSync names no webhook Secret (the webhook is then disabled). */
  webhookKey(): Promise<string | undefined>;
  /** Requests a sync as soon as possible. */
  trigger(): void;
}

/** A listening health, metrics and webhook server. */
export interface ListeningServer {
  readonly server: Server;
  /** `http://host:port`, with a wildcard address shown as loopback. */
  readonly url: string;
}

/**
 * Serves `GET /healthz`, `GET /readyz`, `GET /metrics` and `POST /webhook` on `port` (0 picks a free one).
 * @throws when the port cannot be bound.
 */
export async function listenHttp(deps: HttpRoutesDeps, port: number, host: string): Promise<ListeningServer> {
  const server = createServer((req, res) => {
    route(deps, req, res).catch((err) => {
      deps.log.error({ err: (err as Error).message }, 'http handler failed');
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const a = server.address() as AddressInfo;
  const shown = a.family === 'IPv6' ? `[${a.address}]` : a.address === '0.0.0.0' ? '127.0.0.1' : a.address;
  return { server, url: `http://${shown}:${a.port}` };
}

async function route(deps: HttpRoutesDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method === 'GET' && path === '/healthz') return text(res, 200, 'ok\n');
  if (req.method === 'GET' && path === '/readyz')
    return deps.isReady() ? text(res, 200, 'ok\n') : text(res, 503, 'not ready: no successful sync yet\n');
  if (req.method === 'GET' && path === '/metrics') {
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    res.end(deps.metrics.render());
    return;
  }
  if (req.method === 'POST' && path === WEBHOOK_PATH) return webhook(deps, req, res);
  return text(res, 404, 'not found\n');
}

async function webhook(deps: HttpRoutesDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readBody(req);
  if (!body) {
    deps.metrics.observeWebhook('too_large');
    return text(res, 413, 'payload too large\n');
  }
  const key = await deps.webhookKey();
  if (!key) {
    deps.metrics.observeWebhook('disabled');
    return text(res, 404, 'webhook disabled: set spec.webhookSecretRef on the GitSync\n');
  }
  if (!isSignedBy(key, body, String(req.headers['x-hub-signature-256'] ?? ''))) {
    deps.metrics.observeWebhook('unauthorized');
    deps.log.warn('webhook signature rejected');
    return text(res, 401, 'invalid signature: send X-Hub-Signature-256: sha256=HMAC-SHA256(body, secret)\n');
  }
  if (!deps.isLeader()) {
    deps.metrics.observeWebhook('not_leader');
    return text(res, 503, 'this replica is a standby; retry (the leader syncs)\n');
  }
  deps.metrics.observeWebhook('accepted');
  deps.log.info('webhook accepted; syncing now');
  deps.trigger();
  return text(res, 202, 'sync triggered\n');
}

/** The body, or `undefined` when it exceeds {@link MAX_WEBHOOK_BYTES}. */
async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_WEBHOOK_BYTES) return undefined;
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

function isSignedBy(key: string, body: Buffer, signature: string): boolean {
  const want = `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;
  // Constant time: a byte-by-byte comparison would leak how much of a guessed signature is right.
  return signature.length === want.length && timingSafeEqual(Buffer.from(signature), Buffer.from(want));
}

function text(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/plain' });
  res.end(body);
}
