import type { Writable } from 'node:stream';
import type { EventFormatters, Stamped } from '../core/events.js';
import type { Reporter } from './reporter.js';

const line = (event: Stamped): string => JSON.stringify(event);

/** `--json`: every event, one JSON object per line (NDJSON), console lines and progress included. */
export const jsonFormatters: EventFormatters<string> = {
  log: line,
  'registry.listening': line,
  'registry.request': line,
  'registry.stopped': line,
  'registry.upstream': line,
  'blob.progress': line,
  'image.progress': line,
  'image.built': line,
  'image.pushed': line,
  'image.pulled': line,
  'vm.defined': line,
  'vm.started': line,
  'vm.console': line,
  'vm.reboot': line,
  'vm.stopped': line,
  'vm.crashed': line,
  'guest.ignition': line,
  'guest.pivot': line,
  'guest.pivot.skipped': line,
  'guest.booted': line,
  'guest.health': line,
  'guest.fallback': line,
  'guest.failure': line,
  'guest.progress': line,
  'run.start': line,
  'step.start': line,
  'step.pass': line,
  'step.fail': line,
  'run.end': line,
};

export function createJsonReporter(out: Writable): Reporter {
  return {
    onEvent(event) {
      out.write(`${(jsonFormatters[event.kind] as (event: Stamped) => string)(event)}\n`);
    },
  };
}
