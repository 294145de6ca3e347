import { Worker } from 'node:worker_threads';
import { BatonError } from '@baton/errors';
import type { ChunkResult } from './check-chunk.js';
import type { TrustedKeysFile } from './trusted-keys.js';

interface Pending {
  readonly resolve: (r: ChunkResult) => void;
  readonly reject: (err: Error) => void;
}

/**
 * Worker threads that run {@link checkChunk} on blocks of log lines. Blocks go out round-robin and are transferred,
 * not copied; results come back as typed arrays. The caller keeps results in order.
 */
export class ChunkWorkerPool {
  readonly #workers: Worker[];
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;
  #failure: Error | undefined;
  #closing = false;

  private constructor(count: number, keys: TrustedKeysFile) {
    this.#workers = Array.from({ length: count }, () => spawnWorker(keys));
    for (const w of this.#workers) {
      w.on('message', (msg: ChunkResult & { id: number }) => {
        const p = this.#pending.get(msg.id);
        this.#pending.delete(msg.id);
        p?.resolve(msg);
      });
      w.on('error', (err) => this.#fail(err));
      w.on('exit', (code) => {
        if (code !== 0 && !this.#closing) this.#fail(new Error(`verification worker exited with code ${code}`));
      });
    }
  }

  /** Starts `count` worker threads, each with its own copy of the trusted keys. */
  static start(count: number, keys: TrustedKeysFile): ChunkWorkerPool {
    return new ChunkWorkerPool(count, keys);
  }

  /** Checks one block in a worker. The block's ArrayBuffer is transferred: do not use it afterwards. */
  run(bytes: Buffer): Promise<ChunkResult> {
    if (this.#failure) return Promise.reject(this.#failure);
    const id = this.#nextId++;
    const worker = this.#workers[id % this.#workers.length]!;
    return new Promise<ChunkResult>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      const view = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      worker.postMessage({ id, bytes: view }, [bytes.buffer as ArrayBuffer]);
    });
  }

  /** Stops every worker. */
  async close(): Promise<void> {
    this.#closing = true;
    await Promise.all(this.#workers.map((w) => w.terminate()));
  }

  #fail(cause: Error): void {
    const failure =
      this.#failure ?? new BatonError('internal', `audit verification worker failed: ${cause.message}`, { cause });
    this.#failure = failure;
    for (const p of this.#pending.values()) p.reject(failure);
    this.#pending.clear();
  }
}

function spawnWorker(keys: TrustedKeysFile): Worker {
  const script = new URL(
    import.meta.url.endsWith('.ts') ? './verify-worker.ts' : './verify-worker.js',
    import.meta.url,
  );
  if (!script.pathname.endsWith('.ts')) return new Worker(script, { workerData: { keys } });
  // Running from source (tests, `pnpm baton`): a worker does not inherit the parent's TypeScript loader, so the
  // bootstrap registers tsx first, and the @baton/source condition resolves workspace packages to their sources.
  const tsx = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(script.href)}); });`;
  return new Worker(bootstrap, { eval: true, workerData: { keys }, execArgv: ['--conditions=@baton/source'] });
}
