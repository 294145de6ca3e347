import { parentPort, workerData } from 'node:worker_threads';
import { checkChunk } from './check-chunk.js';
import { TrustedKeySet, type TrustedKeysFile } from './trusted-keys.js';

// Worker thread entry: checks blocks of log lines for the main thread's sequencer (see chunk-worker-pool.ts).
const keys = new TrustedKeySet((workerData as { keys: TrustedKeysFile }).keys);

parentPort!.on('message', (msg: { id: number; bytes: Uint8Array }) => {
  const r = checkChunk(msg.bytes, keys);
  parentPort!.postMessage({ id: msg.id, ...r }, [
    r.leafHashes.buffer,
    r.indexes.buffer,
    r.recordedMs.buffer,
  ] as ArrayBuffer[]);
});
