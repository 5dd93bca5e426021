import type { Writable } from 'node:stream';
import type { EventBus } from '../core/bus.js';
import type { Interrupts } from './interrupts.js';

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  /** Shown in help: `--port PORT`. */
  valueName?: string;
  description: string;
}

/** What a command receives: parsed arguments and its dependencies (no globals, so tests can inject). */
export interface CommandContext {
  args: ParsedArgs;
  bus: EventBus;
  stdout: Writable & { isTTY?: boolean; columns?: number };
  stderr: Writable & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  /** Aborted on SIGINT/SIGTERM: long-running commands stop and clean up. */
  signal: AbortSignal;
  /** The process's signal handling (second-signal hooks, serving a kept run); absent when not run as the CLI. */
  interrupts?: Interrupts;
}

export interface Command {
  name: string;
  summary: string;
  /** Usage line after `devpivot <name>`, e.g. `[--json]`. */
  usage: string;
  description?: string;
  options: Record<string, OptionSpec>;
  /** Positional arguments allowed: [min, max]. Defaults to none. */
  positionals?: [number, number];
  /** Returns the exit code (0 when omitted). Throws DevpivotError for failures users can act on. */
  run(context: CommandContext): Promise<number | undefined>;
}

export class ParsedArgs {
  constructor(
    readonly values: Record<string, string | boolean | string[] | undefined>,
    readonly positionals: string[],
  ) {}

  string(name: string): string | undefined {
    const value = this.values[name];
    return typeof value === 'string' ? value : undefined;
  }

  strings(name: string): string[] {
    const value = this.values[name];
    if (Array.isArray(value)) return value;
    return typeof value === 'string' ? [value] : [];
  }

  flag(name: string): boolean {
    return this.values[name] === true;
  }
}

/** `--connect URI`, shared by every verb that talks to libvirt. */
export function connectOption(defaultNote = 'LIBVIRT_DEFAULT_URI, else qemu:///system for root'): OptionSpec {
  return { type: 'string', short: 'c', valueName: 'URI', description: `libvirt URI (default: ${defaultNote})` };
}
