import { readFile } from 'node:fs/promises';
import { UsageError } from '../../core/errors.js';
import type { Command, CommandContext } from '../command.js';
import { ciPresenter, runScenarioFiles, scenarioOptions } from '../scenario-run.js';
import { formatShard, parseShard, recordedSeconds, type Shard, shardFiles, shardKey } from '../shard.js';

export const command: Command = {
  name: 'run',
  summary: 'Run scenario files non-interactively (CI): plain lines, --json, --junit',
  usage: 'FILE... [--json] [--junit FILE] [--shard I/N [--shard-timings JUNIT]...] [--list] [--keep] [--connect URI]',
  description:
    'Run each scenario (see scenarios/README.md) against real VMs, one after the other, and report every step.\n' +
    'Never opens the interactive view. Exit status: 0 passed, 1 a scenario failed, 2 a usage or set-up error.\n' +
    'CI sharding: --shard I/N runs shard I of N, a deterministic, balanced share of the files (the same files\n' +
    'given in any order, each once, are split the same way; the N shards together run every file once). With\n' +
    "--shard-timings (an earlier run's --junit report) the shares are balanced by recorded time. An empty shard\n" +
    'prints a line saying so on stderr and exits 0. --list prints the files the run (or shard) would run, one per\n' +
    'line, and runs nothing.',
  options: {
    ...scenarioOptions,
    shard: {
      type: 'string',
      valueName: 'I/N',
      description: 'Run only shard I of N (1 ≤ I ≤ N): a deterministic, balanced share of the files',
    },
    'shard-timings': {
      type: 'string',
      multiple: true,
      valueName: 'JUNIT',
      description: "Balance --shard by each file's time in an earlier run's --junit report (repeatable)",
    },
    list: {
      type: 'boolean',
      description: 'Print the files this run (or shard) would run, one per line; run nothing',
    },
  },
  positionals: [1, 1000],
  async run(context) {
    const { args } = context;
    const selected = await selectFiles(context);
    if (args.flag('list')) {
      for (const file of selected.files) context.stdout.write(`${file}\n`);
      if (selected.empty) context.stderr.write(`${selected.empty}\n`);
      return 0;
    }
    const junitName = selected.shard ? `devpivot shard ${formatShard(selected.shard)}` : undefined;
    if (selected.empty) {
      context.stderr.write(`${selected.empty}\n`);
      const junitFile = args.string('junit');
      if (junitFile) await (await import('../../report/junit.js')).mergeJunit(junitFile, [], junitName);
      return 0;
    }
    return runScenarioFiles(selected.files, context, () => ciPresenter(context), {}, { junitName });
  },
};

/**
 * The files to run: all of them as given, or with --shard the shard's (cli/shard.ts), balanced by the times of
 * --shard-timings. Every option is checked here, before anything is read or started.
 */
async function selectFiles(context: CommandContext): Promise<{ files: string[]; shard?: Shard; empty?: string }> {
  const { args } = context;
  const files = args.positionals;
  const spec = args.string('shard');
  const timingFiles = args.strings('shard-timings');
  if (spec === undefined) {
    if (timingFiles.length > 0)
      throw new UsageError('--shard-timings needs --shard I/N', 'add --shard I/N, or leave --shard-timings out');
    return { files };
  }
  const shard = parseShard(spec);
  const cwd = process.cwd();
  let seconds: Map<string, number> | undefined;
  if (timingFiles.length > 0) {
    const { parseJunitTimings } = await import('../../report/junit-timings.js');
    const suites = [];
    for (const file of timingFiles) {
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (error) {
        throw new UsageError(
          `--shard-timings ${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
          "pass the --junit FILE of an earlier devpivot run (in CI: the previous run's artifact), or leave --shard-timings out",
          'SHARD_TIMINGS_INVALID',
        );
      }
      suites.push(...parseJunitTimings(text, file));
    }
    seconds = recordedSeconds(files, suites, cwd);
  }
  const mine = shardFiles(files, shard, { cwd, ...(seconds ? { seconds } : {}) });
  if (mine.length > 0) return { files: mine, shard };
  const distinct = new Set(files.map((file) => shardKey(file, cwd))).size;
  return {
    files: [],
    shard,
    empty: `shard ${formatShard(shard)} is empty: ${distinct} scenario file(s) for ${shard.count} shards; nothing to run`,
  };
}
