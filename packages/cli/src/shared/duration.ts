import { ConfigError } from '@baton/errors';

/** Parses `10m`, `90s`, `1h` or plain seconds into milliseconds. @throws {ConfigError} otherwise. */
export function parseDurationMs(v: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(v.trim());
  if (!m) throw new ConfigError(`--timeout ${v} is invalid: use a duration like 90s, 10m or 1h`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  return Number(m[1]) * unit;
}
