import type { Command } from '../command.js';
import { ciPresenter, runScenarioFiles, scenarioOptions } from '../scenario-run.js';

export const command: Command = {
  name: 'run',
  summary: 'Run scenario files non-interactively (CI): plain lines, --json, --junit',
  usage: 'FILE... [--json] [--junit FILE] [--keep] [--connect URI]',
  description:
    'Run each scenario (see scenarios/README.md) against real VMs, one after the other, and report every step.\n' +
    'Never opens the interactive view. Exit status: 0 passed, 1 a scenario failed, 2 a usage or set-up error.',
  options: scenarioOptions,
  positionals: [1, 1000],
  async run(context) {
    return runScenarioFiles(context.args.positionals, context, () => ciPresenter(context));
  },
};
