/** Human units in scenario files: durations (`90s`, `5m`, `1m30s`) and sizes (`1GiB`, `512MiB`), and their labels. */

/** The longest delay Node's timers take (2^31-1 ms); a longer one fires at once (TimeoutOverflowWarning). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds, or undefined when the text is not a duration. A bare number is seconds. */
export function parseDuration(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.round(value * 1000) : undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((part) => part[0]).join('') !== text) return undefined;
  return Math.round(parts.reduce((sum, part) => sum + Number(part[1]) * DURATION_UNITS[part[2]!]!, 0));
}

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1000,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1000 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1000 ** 3,
  gib: 1024 ** 3,
};

/** Bytes, or undefined. `defaultUnit` applies to bare numbers (memory: MiB). */
export function parseSize(value: string | number, defaultUnit = 1): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value > 0 ? value * defaultUnit : undefined;
  const match = /^(\d+(?:\.\d+)?)\s*([a-zA-Z]*)$/.exec(value.trim());
  if (!match) return undefined;
  const unit = match[2]!.toLowerCase();
  if (unit === '') return Number(match[1]) * defaultUnit;
  const factor = SIZE_UNITS[unit];
  return factor === undefined ? undefined : Math.round(Number(match[1]) * factor);
}

/** `5m`, `90s`, `1.5s`: the inverse of parseDuration, for labels. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms >= 60_000) return `${Math.floor(ms / 60_000)}m${Math.round((ms % 60_000) / 1000)}s`;
  return `${Math.round(ms / 100) / 10}s`;
}
