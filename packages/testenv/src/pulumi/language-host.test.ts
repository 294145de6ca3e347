import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const HOST = fileURLToPath(new URL('../../bin/pulumi-language-nodejs.mjs', import.meta.url));
const sdkRequire = createRequire(createRequire(import.meta.url).resolve('@pulumi/pulumi/package.json'));
const grpc = sdkRequire('@grpc/grpc-js');
const services = sdkRequire('./proto/language_grpc_pb.js');
const emptyPb = sdkRequire('google-protobuf/google/protobuf/empty_pb.js');

let engine: Server | undefined;
afterEach(() => engine?.close());

/** A stand-in for the engine's address: the host only checks that something listens there. */
async function listeningEngine(): Promise<{ server: Server; address: string }> {
  const server = createServer((socket) => socket.destroy());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return { server, address: `127.0.0.1:${port}` };
}

function startHost(engineAddress: string) {
  const child = spawn(process.execPath, [HOST, engineAddress], { stdio: ['ignore', 'pipe', 'pipe'] });
  const port = new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      if (out.includes('\n')) resolve(Number(out.split('\n')[0]));
    });
    child.once('exit', (code) => reject(new Error(`host exited with ${code} before printing its port`)));
  });
  return { child, port };
}

describe("the test bed's pulumi-language-nodejs", () => {
  it('prints its gRPC port first and answers GetPluginInfo with the SDK version', async () => {
    const e = await listeningEngine();
    engine = e.server;
    const { child, port } = startHost(e.address);
    try {
      const client = new services.LanguageRuntimeClient(`127.0.0.1:${await port}`, grpc.credentials.createInsecure());
      const info = await new Promise<{ getVersion(): string }>((resolve, reject) =>
        client.getPluginInfo(new emptyPb.Empty(), (err: Error | null, res: { getVersion(): string }) =>
          err ? reject(err) : resolve(res),
        ),
      );
      expect(info.getVersion()).toBe(sdkRequire('./package.json').version);
      client.close();
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });

  it('stops on its own when the engine is gone (a killed CLI leaves no orphan host)', async () => {
    const e = await listeningEngine();
    const { child, port } = startHost(e.address);
    await port;
    const exited = once(child, 'exit');
    e.server.close();
    const t0 = Date.now();
    await exited;
    expect(Date.now() - t0).toBeLessThan(10_000);
  });
});
