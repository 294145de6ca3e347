#!/usr/bin/env node
// Runs inside a bed's network namespace: accepts TCP connections on HOST:PORT and relays each to the unix socket
// SOCKET, where a server of the test process (which lives outside the namespace) listens. So one address, the
// node's, serves both the Pods in the bed and the tests on the host. Usage: bed-forward.mjs HOST PORT SOCKET
// Plain JS with no dependencies; it exits when its parent (the test process) does.
import { connect, createServer } from 'node:net';

const [host, portArg, socket] = process.argv.slice(2);
const port = Number(portArg);
if (!host || !Number.isInteger(port) || !socket) process.exit(2);
const server = createServer((inbound) => {
  const outbound = connect(socket);
  inbound.pipe(outbound).pipe(inbound);
  const close = () => {
    inbound.destroy();
    outbound.destroy();
  };
  inbound.on('error', close);
  outbound.on('error', close);
});
server.on('error', (err) => {
  process.stderr.write(`bed-forward ${host}:${port}: ${err.message}\n`);
  process.exit(1);
});
server.listen(port, host, () => process.stdout.write('listening\n'));
const parent = process.ppid;
setInterval(() => {
  try {
    process.kill(parent, 0);
  } catch {
    process.exit(0);
  }
}, 1_000).unref();
for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => process.exit(0));
