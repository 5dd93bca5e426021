import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { EventBus } from '../core/bus.js';
import { ExitCode, exitCodeOf, formatError, isDebug, UsageError } from '../core/errors.js';
import { exitProcess } from '../core/exit.js';
import { didYouMean } from '../core/suggest.js';
import { type Command, type CommandContext, type OptionSpec, ParsedArgs } from './command.js';
import { type Interrupts, installInterrupts } from './interrupts.js';
import { verbs } from './verbs.js';

export interface MainIo {
  stdout: CommandContext['stdout'];
  stderr: CommandContext['stderr'];
  env: NodeJS.ProcessEnv;
  signal: AbortSignal;
  interrupts?: Interrupts;
}

const HELP_OPTION: OptionSpec = { type: 'boolean', short: 'h', description: 'Show this help' };

export function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

export function mainHelp(): string {
  const width = Math.max(...verbs.map((verb) => verb.name.length));
  return [
    'devpivot: reproduce the image-based Linux pivot (old OS image -> new oscontainer) locally',
    '',
    'Usage: devpivot <command> [options]',
    '',
    'Commands:',
    ...verbs.map((verb) => `  ${verb.name.padEnd(width)}  ${verb.summary}`),
    '',
    'Options:',
    '  -h, --help     Show help (also: devpivot <command> --help)',
    '  -V, --version  Print the version',
    '',
    'Environment: LIBVIRT_DEFAULT_URI, DEVPIVOT_STATE_DIR, DEVPIVOT_CACHE_DIR, DEBUG=devpivot (stack traces)',
  ].join('\n');
}

export function commandHelp(command: Command): string {
  const options = Object.entries({ ...command.options, help: HELP_OPTION });
  const labels = options.map(([name, spec]) => {
    const flag = `${spec.short ? `-${spec.short}, ` : '    '}--${name}`;
    return spec.type === 'string' ? `${flag} ${spec.valueName ?? name.toUpperCase()}` : flag;
  });
  const width = Math.max(...labels.map((label) => label.length));
  return [
    `Usage: devpivot ${command.name}${command.usage ? ` ${command.usage}` : ''}`,
    '',
    command.description ?? command.summary,
    '',
    'Options:',
    ...options.map(([, spec], i) => `  ${labels[i]!.padEnd(width)}  ${spec.description}`),
  ].join('\n');
}

/** Parse a command's arguments strictly; unknown flags become usage errors with a suggestion. */
export function parseCommandArgs(command: Command, argv: string[]): ParsedArgs {
  const specs = { ...command.options, help: HELP_OPTION };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: argv, options: specs, strict: true, allowPositionals: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const message = (error as Error).message;
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      const flag = /'(-{1,2}[^']+)'/.exec(message)?.[1] ?? '';
      const name = flag.replace(/^-+/, '').split('=')[0] ?? '';
      const hint =
        didYouMean(name, Object.keys(specs), '--') ?? `run 'devpivot ${command.name} --help' for its options`;
      throw new UsageError(`unknown option '${flag}' for 'devpivot ${command.name}'`, hint);
    }
    throw new UsageError(message.split('\n')[0] ?? message, `run 'devpivot ${command.name} --help'`);
  }
  const args = new ParsedArgs(parsed.values as ParsedArgs['values'], parsed.positionals);
  if (args.flag('help')) return args;
  const [min, max] = command.positionals ?? [0, 0];
  if (args.positionals.length < min || args.positionals.length > max) {
    const extra = args.positionals.length > max ? `unexpected argument '${args.positionals[max]}'` : 'missing argument';
    throw new UsageError(`${extra} for 'devpivot ${command.name}'`, `usage: devpivot ${command.name} ${command.usage}`);
  }
  return args;
}

/** The CLI: resolve the verb, load it lazily, run it, and turn every error into a message and an exit code. */
export async function main(argv: string[], io: MainIo): Promise<number> {
  try {
    const [first, ...rest] = argv;
    if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
      const target = first === 'help' ? rest[0] : undefined;
      if (target === undefined) {
        io.stdout.write(`${mainHelp()}\n`);
        return ExitCode.ok;
      }
      return await main([target, '--help'], io);
    }
    if (first === '--version' || first === '-V') {
      io.stdout.write(`${version()}\n`);
      return ExitCode.ok;
    }
    const verb = verbs.find((candidate) => candidate.name === first);
    if (!verb) {
      const kind = first.startsWith('-') ? 'option' : 'command';
      const hint =
        didYouMean(
          first.replace(/^-+/, ''),
          verbs.map((v) => v.name),
        ) ?? "run 'devpivot --help' for the list of commands";
      throw new UsageError(`unknown ${kind} '${first}'`, hint);
    }
    const { command } = await verb.load();
    const args = parseCommandArgs(command, rest);
    if (args.flag('help')) {
      io.stdout.write(`${commandHelp(command)}\n`);
      return ExitCode.ok;
    }
    const bus = new EventBus();
    const code = (await command.run({ args, bus, ...io })) ?? ExitCode.ok;
    return io.signal.aborted ? Math.max(code, exitCodeOf(io.signal.reason)) : code;
  } catch (error) {
    if (io.signal.aborted && error === io.signal.reason) return exitCodeOf(error);
    io.stderr.write(`${formatError(error, { debug: isDebug(io.env) })}\n`);
    return io.signal.aborted ? exitCodeOf(io.signal.reason) : exitCodeOf(error);
  }
}

/**
 * The process: signals (interrupts.ts), main, then exit with its status once stdout and stderr are flushed.
 * Exiting explicitly is the guarantee that a run that ended ends the process, whatever a library left open.
 */
export async function cli(argv: string[]): Promise<never> {
  const interrupts = installInterrupts();
  for (const stream of [process.stdout, process.stderr])
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') interrupts.outputClosed();
      else throw error;
    });
  const code = await main(argv, {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    signal: interrupts.signal,
    interrupts,
  });
  if (isDebug(process.env)) {
    const open = process.getActiveResourcesInfo().filter((kind) => kind !== 'TTYWrap');
    if (open.length > 0) process.stderr.write(`debug: still open at exit: ${open.join(', ')}\n`);
  }
  await Promise.all(
    [process.stdout, process.stderr].map((stream) => new Promise((resolve) => stream.write('', resolve))),
  );
  exitProcess(code);
}
