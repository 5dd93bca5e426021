/** What `devpivot run` and `devpivot up` share: their options, the default scenario, running scenario files. */
import { fileURLToPath } from 'node:url';
import { cacheDir, stateDir } from '../core/paths.js';
import { type RunResult, runScenario } from '../engine/engine.js';
import { realDeps } from '../engine/real-deps.js';
import { createJsonReporter } from '../report/json.js';
import { createJunitReporter, mergeJunit } from '../report/junit.js';
import { createPlainReporter } from '../report/plain.js';
import type { Presenter } from '../report/presenter.js';
import { loadScenario } from '../scenario/parse.js';
import type { Scenario } from '../scenario/types.js';
import { type CommandContext, connectOption, type OptionSpec } from './command.js';

/** The scenario `devpivot up` runs without arguments. */
export const DEFAULT_SCENARIO = fileURLToPath(new URL('../../../scenarios/old-to-new.yaml', import.meta.url));

export const scenarioOptions: Record<string, OptionSpec> = {
  json: { type: 'boolean', description: 'Print every event as one JSON object per line (NDJSON)' },
  junit: { type: 'string', valueName: 'FILE', description: 'Write a JUnit XML report (a testcase per step and node)' },
  keep: { type: 'boolean', description: 'Leave the VMs running at the end (remove them with devpivot down)' },
  connect: connectOption(),
  session: {
    type: 'string',
    valueName: 'ID',
    description: 'Session id: domains are named devpivot-ID-NODE (default: random)',
  },
};

/**
 * Run scenarios one after the other with the real modules. Every file is validated before anything starts
 * (a bad file is exit status 2 and nothing runs). Exit status: the worst of the runs (0 passed, 1 failed, 2 set-up).
 */
export async function runScenarioFiles(
  files: string[],
  context: CommandContext,
  present: (scenario: Scenario) => Promise<Presenter> | Presenter,
): Promise<number> {
  const scenarios = files.map((file) => loadScenario(file));
  const { args, env, bus } = context;
  const state = stateDir(env);
  const junitFile = args.string('junit');
  const junitDocs: string[] = [];
  let exitCode = 0;
  for (const scenario of scenarios) {
    if (context.signal.aborted) break;
    const presenter = await present(scenario);
    const reporters = [...presenter.reporters];
    const junit = junitFile ? createJunitReporter() : undefined;
    if (junit) reporters.push(junit);
    const dispose = bus.subscribe((event) => {
      for (const reporter of reporters) reporter.onEvent?.(event);
    });
    const signal = presenter.signal ? AbortSignal.any([context.signal, presenter.signal]) : context.signal;
    const keepFlag = args.flag('keep');
    let result: RunResult;
    try {
      result = await runScenario({
        scenario,
        deps: realDeps({ stateDir: state, env }),
        bus,
        signal,
        keep: presenter.keep ? () => keepFlag || presenter.keep!() : keepFlag,
        ...(args.string('connect') ? { uri: args.string('connect') } : {}),
        ...(args.string('session') ? { sessionId: args.string('session') } : {}),
        stateDir: state,
        cacheDir: cacheDir(env),
      });
    } finally {
      dispose();
    }
    for (const reporter of reporters) await reporter.onEnd?.(result, scenario);
    await presenter.finish?.(result);
    if (junit) junitDocs.push(junit.document());
    exitCode = Math.max(exitCode, result.exitCode);
  }
  if (junitFile) await mergeJunit(junitFile, junitDocs);
  return exitCode;
}

/** Reporters for a non-interactive run: NDJSON with --json, plain lines otherwise. */
export function ciPresenter(context: CommandContext): Presenter {
  return {
    reporters: [context.args.flag('json') ? createJsonReporter(context.stdout) : createPlainReporter(context.stdout)],
  };
}
