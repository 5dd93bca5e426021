/**
 * `- expect: { node, event | booted | console, match, within }`: wait until the node's log shows the event (from
 * where the last wait on that node stopped), or fail at the deadline.
 */

import { identityOf, isBootOf } from './boot-identity.js';
import { DEFAULT_WITHIN_MS, type StepBase, type StepDefinition } from './definition.js';
import type { StepReader, StepSource } from './reader.js';
import type { NodeLogEvent } from './runtime.js';
import { formatDuration } from './units.js';

/** What an `expect` step waits for (the list is the type: one cannot miss the other). */
export const EXPECT_EVENTS = [
  'ignition',
  'pivot.pulling',
  'pivot.staging',
  'pivot.staged',
  'pivot.rebooting',
  'pivot.skipped',
  'reboot',
  'stopped',
  'booted',
  'failure',
  'health.pass',
  'health.fail',
  'fallback',
  'console',
] as const;
export type ExpectEvent = (typeof EXPECT_EVENTS)[number];

export interface ExpectStep extends StepBase {
  kind: 'expect';
  node: string;
  event: ExpectEvent;
  withinMs: number;
  /** For `booted`: an oscontainer or image name whose commit must be the booted one. */
  booted?: string;
  /** For `console`, `failure` and `health.fail`: a regular expression the line / reason / failed check must match. */
  match?: string;
}

/** Label `expect node1 booted new within 10m`, `expect node1 console /re/ within 5m`, `expect node1 failure /re/ …`. */
export function expectStep(fields: Omit<ExpectStep, 'kind' | 'label'>): ExpectStep {
  const { node, event, booted, match, withinMs } = fields;
  const what =
    event === 'booted' && booted !== undefined
      ? `booted ${booted}`
      : event === 'console'
        ? `console /${match}/`
        : `${event}${match ? ` /${match}/` : ''}`;
  return { kind: 'expect', ...fields, label: `expect ${node} ${what} within ${formatDuration(withinMs)}` };
}

export const expect: StepDefinition<ExpectStep> = {
  schema: { keys: ['node', 'event', 'booted', 'console', 'match', 'within'], required: [], nodes: 'needs-running' },
  parse({ body, pos }: StepSource, read: StepReader) {
    const f = read.fields(body, 'expect', expect.schema.keys);
    const node = read.node(f.get('node')?.value, body);
    const forms = ['event', 'booted', 'console'].filter((key) => f.has(key));
    if (forms.length !== 1)
      read.fail(
        body,
        `expect needs exactly one of 'event', 'booted' or 'console'${forms.length ? `, got ${forms.join(' and ')}` : ''}`,
      );
    const withinMs = f.has('within') ? read.duration(f.get('within')!.value, 'expect.within') : DEFAULT_WITHIN_MS;
    if (f.has('booted'))
      return expectStep({ node, event: 'booted', booted: read.bootTarget(f.get('booted')!.value), withinMs, pos });
    if (f.has('console'))
      return expectStep({
        node,
        event: 'console',
        match: read.regex(f.get('console')!.value, 'expect.console'),
        withinMs,
        pos,
      });
    const eventValue = f.get('event')!.value;
    const raw = read.string(eventValue, 'expect.event');
    // `event: staged` means `pivot.staged`
    const written = /^(pulling|staging|staged|rebooting|skipped)$/.test(raw) ? `pivot.${raw}` : raw;
    const event = read.oneOf(read.rewritten(written, eventValue), 'expect.event', EXPECT_EVENTS);
    if (event === 'console') read.fail(eventValue, "write 'console: <regex>' instead of 'event: console'");
    const match = f.has('match') ? read.regex(f.get('match')!.value, 'expect.match') : undefined;
    if (match !== undefined && event !== 'failure' && event !== 'health.fail')
      read.fail(
        f.get('match')!.key,
        "'match' applies to 'event: failure' (the reason) and 'event: health.fail' (the failed check) only",
      );
    return expectStep({ node, event, withinMs, ...(match !== undefined ? { match } : {}), pos });
  },
  nodesOf: (step) => [step.node],
  async run(step, runtime) {
    const booted = step.booted;
    const pattern = step.match === undefined ? undefined : new RegExp(step.match);
    const matches = (event: NodeLogEvent): boolean => {
      switch (step.event) {
        case 'ignition':
          return event.kind === 'guest.ignition' && event.ok;
        case 'pivot.pulling':
        case 'pivot.staging':
        case 'pivot.staged':
        case 'pivot.rebooting':
          return event.kind === 'guest.pivot' && `pivot.${event.phase}` === step.event;
        case 'pivot.skipped':
          return event.kind === 'guest.pivot.skipped';
        case 'reboot':
          return event.kind === 'vm.reboot';
        case 'stopped':
          return event.kind === 'vm.stopped';
        case 'booted':
          // An image's commit may only be known once a node of it booted: look it up per event.
          if (event.kind !== 'guest.booted') return false;
          if (booted === undefined) return true;
          {
            const identity = identityOf(runtime, booted);
            return identity !== undefined && isBootOf(identity, event);
          }
        case 'failure':
          return event.kind === 'guest.failure' && (!pattern || pattern.test(event.reason));
        case 'health.pass':
          return event.kind === 'guest.health' && event.ok;
        case 'health.fail':
          return event.kind === 'guest.health' && !event.ok && (!pattern || pattern.test(event.check ?? ''));
        case 'fallback':
          return event.kind === 'guest.fallback';
        case 'console':
          return event.kind === 'vm.console' && pattern!.test(event.line);
      }
    };
    const what = `${step.node} ${step.event}${booted ? ` ${booted}` : ''}${step.match ? ` /${step.match}/` : ''}`;
    await runtime.waitFor(step.node, matches, step.withinMs, what, {
      ...(step.event === 'failure' ? { expectFailureOn: step.node } : {}),
    });
  },
  expectsFailureOn: (step) => (step.event === 'failure' ? step.node : undefined),
};
