import type { Writable } from 'node:stream';
import { render } from 'ink';
import type { EventBus } from '../core/bus.js';
import type { Presenter } from '../report/presenter.js';
import type { Scenario } from '../scenario/types.js';
import { App } from './app.js';

/** What the view needs of its caller: the run's bus and the terminal to draw on. */
export interface TuiOutput {
  bus: EventBus;
  stdout: Writable;
}

/**
 * Mount the Ink view for one run: `q`/`k` abort the run through the presenter's signal (the engine cleans up,
 * or keeps the VMs for `k`); at the end the view shows the summary and unmounts.
 */
export function tuiPresenter(scenario: Scenario, context: TuiOutput): Presenter {
  const quit = new AbortController();
  let keep = false;
  const onQuit = (keepVms: boolean) => {
    keep = keepVms;
    quit.abort(new Error(keepVms ? 'quit with k (VMs kept)' : 'quit with q'));
  };
  const instance = render(<App bus={context.bus} scenario={scenario} onQuit={onQuit} />, {
    stdout: context.stdout as NodeJS.WriteStream,
    stdin: process.stdin,
    exitOnCtrlC: false,
    patchConsole: true,
  });
  return {
    reporters: [],
    keep: () => keep,
    signal: quit.signal,
    async finish() {
      // Let the last events (run.end) render before unmounting.
      await new Promise((resolve) => setTimeout(resolve, 150));
      instance.unmount();
      await instance.waitUntilExit();
    },
  };
}
