// Shared helpers of the benchmark scripts: every bench reports medians the same way.
import { readFile } from 'node:fs/promises';

/** Median of a non-empty list (mean of the middle two for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** The number after `name` on the command line (`--count 500`), or `fallback` when the flag is absent. */
export function numberFlag(args: readonly string[], name: string, fallback: number): number {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

/** `n` rounded to `digits` decimals (for figures in results files). */
export function round(n: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** Peak resident set size of a live process in KB (VmHWM), 0 when it is gone. */
export async function peakRssKB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
}
