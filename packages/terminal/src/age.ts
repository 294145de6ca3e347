/**
 * A duration as kubectl's AGE column prints it (k8s.io/apimachinery duration.HumanDuration): `45s`, `5m30s`, `42m`,
 * `3h12m`, `20h`, `3d4h`, `45d`, `2y30d`; precise where it is recent, coarse where it is old.
 */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < 0) return '0s';
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  const years = Math.floor(hours / 24 / 365);
  if (years < 8) {
    const d = Math.floor(hours / 24) % 365;
    return d === 0 ? `${years}y` : `${years}y${d}d`;
  }
  return `${years}y`;
}

/** The age of an RFC 3339 time at `now` (`5m`), or `<unknown>` as kubectl prints for a time it cannot read. */
export function ageOf(time: string | undefined, now: number): string {
  const at = time === undefined ? Number.NaN : Date.parse(time);
  return Number.isNaN(at) ? '<unknown>' : humanDuration(now - at);
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** Whether `value` is an RFC 3339 timestamp (shown as an age, the time itself in `-o wide`). */
export function isTimestamp(value: unknown): value is string {
  return typeof value === 'string' && RFC3339.test(value);
}
