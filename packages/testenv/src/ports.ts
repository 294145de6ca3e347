import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';

/** The kernel's ephemeral port range: outgoing connections take their local ports from it. */
function ephemeralRange(): [number, number] {
  try {
    const [lo, hi] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (lo && hi) return [lo, hi];
  } catch {}
  return [32768, 60999];
}

function listen(port: number): Promise<Server | undefined> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(undefined));
    s.listen(port, '127.0.0.1', () => resolve(s));
  });
}

/**
 * Finds `count` distinct free loopback ports. They are picked below the ephemeral range: a port the
 * kernel handed out as "free" from that range can be taken by any outgoing connection (kubectl, a
 * controller's watch) before our component binds it, which made concurrent cluster starts flaky.
 */
export async function freePorts(count: number, random: () => number = Math.random): Promise<number[]> {
  const [ephemeralLo] = ephemeralRange();
  const lo = 10_000;
  const hi = Math.max(lo + 1_000, ephemeralLo - 1);
  const held: Server[] = [];
  const ports: number[] = [];
  try {
    for (let attempts = 0; ports.length < count; attempts++) {
      if (attempts > count * 50)
        throw new Error(`found only ${ports.length} of ${count} free loopback ports in ${lo}-${hi}`);
      const port = lo + Math.floor(random() * (hi - lo));
      if (ports.includes(port)) continue;
      const s = await listen(port);
      if (s) {
        held.push(s);
        ports.push(port);
      }
    }
    return ports;
  } finally {
    await Promise.all(held.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }
}
