import type { Command } from '../command.js';
import { ciPresenter, DEFAULT_SCENARIO, runScenarioFiles, scenarioOptions } from '../scenario-run.js';

/** The Ink view only where someone watches: a terminal, and not CI. */
export function interactive(stdout: { isTTY?: boolean }, env: NodeJS.ProcessEnv): boolean {
  return Boolean(stdout.isTTY) && !env.CI && env.TERM !== 'dumb';
}

export const command: Command = {
  name: 'up',
  summary: 'Run a scenario live: registry, images, VMs, pivot (default: old-to-new)',
  usage: '[FILE] [--json] [--junit FILE] [--keep] [--connect URI]',
  description:
    'Start the registry, build the oscontainers, boot the nodes and watch them pivot, live. Without FILE it runs\n' +
    'scenarios/old-to-new.yaml: a fixture:1 node pivots to an oscontainer built from fixture:2.\n' +
    'Keys: up/down or Tab select a node, c toggles its console, q quits (removing the VMs), k quits keeping them.\n' +
    'Not a terminal, CI=true or --json: plain lines (or NDJSON) instead of the interactive view.',
  options: scenarioOptions,
  positionals: [0, 1],
  async run(context) {
    const file = context.args.positionals[0] ?? DEFAULT_SCENARIO;
    if (context.args.flag('json') || !interactive(context.stdout, context.env)) {
      return runScenarioFiles([file], context, () => ciPresenter(context));
    }
    const { tuiPresenter } = await import('../../tui/presenter.js');
    return runScenarioFiles([file], context, (scenario) => tuiPresenter(scenario, context));
  },
};
