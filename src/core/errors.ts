import { ERROR_CODES, type ErrorCode } from './error-codes.js';

export type { ErrorCode } from './error-codes.js';

/**
 * One error type for everything a user can cause or fix. `code` is one of the catalog (error-codes.ts) and
 * stable (scripts and tests match on it), `message` says what happened, `hint` says what to do (the catalog's
 * default when the raiser passes none). The CLI's top-level handler prints them.
 */
export const ExitCode = { ok: 0, failure: 1, usage: 2, interrupted: 130, outputClosed: 141, terminated: 143 } as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export interface DevpivotErrorOptions {
  /** Overrides the catalog's default hint for the code. */
  hint?: string;
  cause?: unknown;
  /** 1 for a failed run, 2 for usage or set-up errors (default: the catalog's for the code, else 1). */
  exitCode?: ExitCode;
}

export class DevpivotError extends Error {
  readonly code: ErrorCode;
  readonly hint: string | undefined;
  readonly exitCode: ExitCode;

  constructor(code: ErrorCode, message: string, options: DevpivotErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DevpivotError';
    this.code = code;
    this.hint = options.hint ?? ERROR_CODES[code].hint;
    this.exitCode = options.exitCode ?? ERROR_CODES[code].exitCode ?? ExitCode.failure;
  }
}

/** Bad command line or bad input file: exit status 2. */
export class UsageError extends DevpivotError {
  constructor(message: string, hint?: string, code: ErrorCode = 'USAGE') {
    super(code, message, { hint, exitCode: ExitCode.usage });
    this.name = 'UsageError';
  }
}

export function isDevpivotError(value: unknown): value is DevpivotError {
  return value instanceof DevpivotError;
}

export interface FormatOptions {
  /** Print stack traces and causes (DEBUG=devpivot). */
  debug: boolean;
}

/** Render an error for a human: title line, hint, and the cause chain only when debugging. */
export function formatError(error: unknown, options: FormatOptions): string {
  const lines: string[] = [];
  if (isDevpivotError(error)) {
    lines.push(`error[${error.code}]: ${error.message}`);
    if (error.hint) lines.push(`hint: ${error.hint}`);
  } else if (error instanceof Error) {
    lines.push(`error: ${error.message}`);
    if (!options.debug)
      lines.push('hint: this is a bug in devpivot; rerun with DEBUG=devpivot for details and report it');
  } else {
    lines.push(`error: ${String(error)}`);
  }
  if (options.debug && error instanceof Error) {
    lines.push('', error.stack ?? '');
    let cause = error.cause;
    while (cause !== undefined) {
      lines.push('caused by:', cause instanceof Error ? (cause.stack ?? cause.message) : String(cause));
      cause = cause instanceof Error ? cause.cause : undefined;
    }
  }
  return lines.join('\n');
}

export function exitCodeOf(error: unknown): ExitCode {
  return isDevpivotError(error) ? error.exitCode : ExitCode.failure;
}

export function isDebug(env: NodeJS.ProcessEnv = process.env): boolean {
  return (env.DEBUG ?? '').split(',').some((part) => part.trim() === 'devpivot' || part.trim() === '*');
}
