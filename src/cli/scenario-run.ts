/** What `devpivot run` and `devpivot up` share: their options, the default scenario, running scenario files. */
import { fileURLToPath } from 'node:url';
import { ExitCode, UsageError } from '../core/errors.js';
import { cacheDir, libvirtUri, stateDir } from '../core/paths.js';
import type { RunResult } from '../engine/engine.js';
import type { Presenter } from '../report/presenter.js';
import { type LoadOptions, loadScenarios } from '../scenario/parse.js';
import type { Scenario } from '../scenario/types.js';
import { assertValidSessionId, newSessionId } from '../vm/sessions.js';
import { type CommandContext, connectOption, type OptionSpec } from './command.js';
import { handOffRemoval } from './handoff.js';
import { serveKept } from './keep.js';
import { scenarioEnvironment } from './scenario-environment.js';

/** The scenario `devpivot up` runs without arguments. */
export const DEFAULT_SCENARIO = fileURLToPath(new URL('../../../scenarios/old-to-new.yaml', import.meta.url));

export const scenarioOptions: Record<string, OptionSpec> = {
  json: { type: 'boolean', description: 'Print every event as one JSON object per line (NDJSON)' },
  junit: { type: 'string', valueName: 'FILE', description: 'Write a JUnit XML report (a testcase per step and node)' },
  keep: {
    type: 'boolean',
    description: 'At the end, keep the VMs, the registry and console logging; Ctrl-C (or devpivot down) ends it',
  },
  connect: connectOption(),
  session: {
    type: 'string',
    valueName: 'ID',
    description: 'Session id: domains are named devpivot-ID-NODE (default: random)',
  },
};

/**
 * Run scenarios one after the other with the real modules. Every file is validated first, every problem of
 * every file reported at once (exit status 2), and nothing starts before all of them are valid: no registry, no
 * build, no libvirt connection (the engine is not even loaded). Exit status: the worst of the runs (0 passed,
 * 1 failed, 2 set-up), or 130/143 when interrupted. `junitName` names the --junit document's <testsuites>.
 */
export async function runScenarioFiles(
  files: string[],
  context: CommandContext,
  present: (scenario: Scenario) => Promise<Presenter> | Presenter,
  load: LoadOptions = {},
  { junitName }: { junitName?: string } = {},
): Promise<number> {
  const { args, env, bus } = context;
  const keepFlag = args.flag('keep');
  if (keepFlag && files.length > 1)
    throw new UsageError(
      '--keep takes one scenario file',
      'run the scenario to keep on its own: devpivot up FILE --keep',
    );
  // Before anything: the id names a directory under the state directory and every libvirt object.
  const chosenSession = args.string('session');
  if (chosenSession !== undefined) assertValidSessionId(chosenSession);
  const scenarios = await loadScenarios(files, scenarioEnvironment(libvirtUri(args.string('connect'), env)), load);
  const [{ runScenarioServing }, { realDeps }, { createJunitReporter, mergeJunit }] = await Promise.all([
    import('../engine/engine.js'),
    import('../engine/real-deps.js'),
    import('../report/junit.js'),
  ]);
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
    // The session is chosen here, so that a second Ctrl-C can hand its removal over (handoff.ts).
    const sessionId = args.string('session') ?? newSessionId();
    const uri = libvirtUri(args.string('connect'), env);
    const offHandoff = context.interrupts?.onEmergency(async () => {
      if (!(keepFlag || presenter.keep?.())) handOffRemoval(sessionId, uri, env);
    });
    let outcome: Awaited<ReturnType<typeof runScenarioServing>>;
    try {
      outcome = await runScenarioServing({
        scenario,
        deps: realDeps({ stateDir: state, env }),
        bus,
        signal,
        keep: presenter.keep ? () => keepFlag || presenter.keep!() : keepFlag,
        ...(context.interrupts ? { onEmergency: context.interrupts.onEmergency } : {}),
        uri,
        sessionId,
        stateDir: state,
        cacheDir: cacheDir(env),
      });
    } finally {
      dispose();
      offHandoff?.();
    }
    const result: RunResult = outcome.result;
    for (const reporter of reporters) await reporter.onEnd?.(result, scenario);
    await presenter.finish?.(result);
    if (junit) junitDocs.push(junit.document());
    exitCode = Math.max(exitCode, result.exitCode);
    if (outcome.kept) await serveKept(outcome.kept, context, state);
  }
  if (junitFile) await mergeJunit(junitFile, junitDocs, junitName);
  // Interrupted: the status says so, whatever the runs' results were (a kept run's serving excepted).
  if (context.signal.aborted) return (context.signal.reason as { exitCode?: number }).exitCode ?? ExitCode.interrupted;
  return exitCode;
}

/** Reporters for a non-interactive run: NDJSON with --json, plain lines otherwise. */
export async function ciPresenter(context: CommandContext): Promise<Presenter> {
  if (context.args.flag('json')) {
    const { createJsonReporter } = await import('../report/json.js');
    return { reporters: [createJsonReporter(context.stdout)] };
  }
  const { createPlainReporter } = await import('../report/plain.js');
  return { reporters: [createPlainReporter(context.stdout)] };
}
