import { loadTrustedKeys, type TrustedKeySet } from '@baton/audit';
import { ConfigError } from '@baton/errors';

/** Writes a line to stderr (progress, warnings): stdout stays clean for -o json/yaml and --json. */
export const say = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

/** Writes text to stdout. */
export const print = (text: string): void => {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
};

/** Parses a whole-number flag value, or throws a ConfigError naming the flag. */
export function intArg(flag: string, min = 0) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < min)
      throw new ConfigError(`${flag} ${value} is invalid: use a whole number of ${min} or more`);
    return n;
  };
}

/**
 * Parses a time flag: an RFC 3339 time or date (`2026-05-01`, `2026-05-01T12:00:00Z`) or an age before `now`
 * (`90m`, `24h`, `7d`). Returns epoch ms.
 */
export function timeArg(flag: string, now: () => number = Date.now) {
  return (value: string): number => {
    const age = /^(\d+)(s|m|h|d)$/.exec(value);
    if (age) return now() - Number(age[1]) * { s: 1e3, m: 6e4, h: 36e5, d: 864e5 }[age[2] as 's' | 'm' | 'h' | 'd'];
    const ms = /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : Number.NaN;
    if (Number.isNaN(ms))
      throw new ConfigError(
        `${flag} ${value} is invalid: use a time like 2026-05-01T12:00:00Z or an age like 24h or 7d`,
      );
    return ms;
  };
}

/** Loads the trusted-keys file named by --keys (a ConfigError says which file and why when it cannot). */
export function keysFrom(path: string): Promise<TrustedKeySet> {
  return loadTrustedKeys(path);
}
