import { Box, Static, Text, useInput } from 'ink';
import { useEffect, useLayoutEffect, useReducer, useRef, useState } from 'react';
import type { EventBus } from '../core/bus.js';
import type { Scenario } from '../scenario/types.js';
import { formatDuration } from '../scenario/units.js';
import { type Action, initialView, type NodeView, percent, reduce, type StepView, type ViewState } from './state.js';

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const BAR_WIDTH = 20;

export interface AppProps {
  bus: EventBus;
  scenario: Scenario;
  /** `q` (keep=false) or `k` (keep=true): the presenter stops the run; the engine cleans up. */
  onQuit: (keep: boolean) => void;
  /** Clock for the elapsed times (tests pass a fixed one). */
  now?: () => number;
  /** Spinner and clock refresh, ms (0 disables: tests). */
  tickMs?: number;
}

/**
 * The interactive view. It only subscribes to the bus and folds events with the pure reducer of state.ts; the
 * run itself lives in the engine, never in React effects.
 */
export function App({ bus, scenario, onQuit, now = Date.now, tickMs = 100 }: AppProps) {
  const [state, dispatch] = useReducer(reduce, scenario, initialView);
  const [frame, setFrame] = useState(0);
  // Guards quitting synchronously: the input handler's `state` can be one render stale when keys come fast.
  const quitRequested = useRef(false);

  // Layout effect: subscribed as soon as the first frame is committed, so no early event is missed.
  useLayoutEffect(() => bus.subscribe((event) => dispatch({ type: 'event', event })), [bus]);
  useEffect(() => {
    if (tickMs <= 0) return;
    const timer = setInterval(() => {
      setFrame((value) => value + 1);
      dispatch({ type: 'tick', now: now() });
    }, tickMs);
    return () => clearInterval(timer);
  }, [tickMs, now]);

  useInput((input, key) => {
    const act = (action: Action) => dispatch(action);
    if (key.upArrow) act({ type: 'select', delta: -1 });
    else if (key.downArrow || key.tab) act({ type: 'select', delta: 1 });
    else if (input === 'c' && !key.ctrl) act({ type: 'toggle-console' });
    else if ((input === 'q' || input === 'k' || (key.ctrl && input === 'c')) && !quitRequested.current && !state.done) {
      quitRequested.current = true;
      const keep = input === 'k';
      act({ type: 'quit', keep });
      onQuit(keep);
    }
  });

  const clock = Math.max(state.now, now());
  const finished = state.steps.filter((step) => step.status === 'passed' || step.status === 'failed');
  const running = state.steps.find((step) => step.status === 'running');
  const spinner = SPINNER[frame % SPINNER.length]!;
  return (
    <>
      <Static items={finished}>{(step) => <StepLine key={step.index} step={step} />}</Static>
      <Box flexDirection="column">
        <Header state={state} clock={clock} />
        {running && (
          <Text>
            <Text color="cyan">{spinner}</Text> {running.name}
          </Text>
        )}
        {state.activity && !state.done && <Text dimColor>{truncate(state.activity, 100)}</Text>}
        <Box flexDirection="column" marginTop={1}>
          {state.nodes.map((node, index) => (
            <NodeRow key={node.name} node={node} selected={index === state.selected} spinner={spinner} clock={clock} />
          ))}
        </Box>
        {state.showConsole && state.nodes[state.selected] && <ConsolePane node={state.nodes[state.selected]!} />}
        {state.done ? <Summary state={state} /> : <Footer state={state} />}
      </Box>
    </>
  );
}

function Header({ state, clock }: { state: ViewState; clock: number }) {
  const elapsed = state.startedAt
    ? formatClock((state.done ? state.startedAt + state.done.ms : clock) - state.startedAt)
    : '0:00';
  return (
    <Text>
      <Text bold>devpivot</Text> · scenario <Text bold>{state.scenario}</Text> · registry{' '}
      <Text color="blue">{state.registryUrl ?? 'starting'}</Text> · {elapsed}
    </Text>
  );
}

export function StepLine({ step }: { step: StepView }) {
  const ms = step.ms === undefined ? '' : ` (${formatDuration(step.ms)})`;
  if (step.status === 'passed')
    return (
      <Text>
        <Text color="green">✓</Text> {step.name}
        <Text dimColor>{ms}</Text>
      </Text>
    );
  return (
    <Text>
      <Text color="red">✗</Text> {step.name}
      <Text dimColor>{ms}</Text>
      {step.error ? <Text color="red">{`: ${step.error}`}</Text> : null}
    </Text>
  );
}

const BUSY = new Set(['booting', 'defined', 'pulling', 'importing', 'staging', 'staged', 'rebooting', 'ignition done']);

function NodeRow({
  node,
  selected,
  spinner,
  clock,
}: {
  node: NodeView;
  selected: boolean;
  spinner: string;
  clock: number;
}) {
  const failed = node.phase === 'failed' || node.phase === 'crashed';
  const mark = failed
    ? '✗'
    : BUSY.has(node.phase)
      ? spinner
      : node.phase === 'booted' || node.phase === 'already at target'
        ? '●'
        : '·';
  // The target keeps the scenario's name from the first frame to the last; the version booted since is added.
  const moved = node.current !== undefined && node.current !== node.from;
  const versions = node.target
    ? `${node.from ?? '?'} → ${node.target}${node.fallback ? ` (back on ${node.current ?? node.from ?? '?'})` : moved ? ` (at ${node.current})` : ''}`
    : `${node.from ?? '?'} → ${moved ? node.current : '—'}`;
  return (
    <Box flexDirection="column">
      <Text inverse={selected}>
        {selected ? '›' : ' '} <Text bold>{node.name.padEnd(10)}</Text>{' '}
        <Text color={failed ? 'red' : 'cyan'}>{mark}</Text> {node.phase.padEnd(17)} {versions.padEnd(18)}
        {node.progress && node.phase === 'pulling'
          ? ` ${bar(node.progress.sent, node.progress.total)} ${percent(node.progress.sent, node.progress.total)}%`
          : ''}
        {`  reboots ${node.reboots}`}
        {node.startedAt ? `  ${formatClock(clock - node.startedAt)}` : ''}
      </Text>
      {node.guest && !node.failure && <Text dimColor>{`    guest: ${guestText(node.guest)}`}</Text>}
      {node.health && !node.failure && (
        <Text color={node.health.ok && !node.fallback ? 'green' : 'yellow'}>{`    ${healthText(node)}`}</Text>
      )}
      {node.failure && <Text color="red">{`    ${truncate(node.failure, 110)}`}</Text>}
    </Box>
  );
}

/** greenboot's verdict in words: a failed check and a fallback are what the node's checks decided. */
export function healthText(node: NodeView): string {
  const check = node.health?.check ? `health check ${node.health.check} failed` : 'health checks failed';
  if (node.fallback)
    return `fell back to ${node.current ?? node.from ?? 'the previous version'}: ${check} (greenboot ran ${node.fallback.tool} rollback)`;
  if (node.health?.ok) return 'health checks passed (greenboot: boot is green)';
  return `${check}: GRUB boots it again until its counter runs out, then the previous deployment`;
}

function ConsolePane({ node }: { node: NodeView }) {
  return (
    <Box flexDirection="column" borderStyle="round" borderColor="gray" marginTop={1}>
      <Text dimColor>console · {node.name}</Text>
      {node.console.length === 0 ? (
        <Text dimColor>(no output yet)</Text>
      ) : (
        node.console.map((line, index) => (
          <Text key={index} wrap="truncate-end">
            {displayLine(line)}
          </Text>
        ))
      )}
    </Box>
  );
}

function Footer({ state }: { state: ViewState }) {
  if (state.quitting)
    return (
      <Text color="yellow">
        {state.quitting === 'keep' ? 'stopping, keeping the VMs…' : 'stopping and cleaning up…'}
      </Text>
    );
  return <Text dimColor>↑/↓ or Tab select · c console · q quit (clean up) · k quit, keep VMs</Text>;
}

function Summary({ state }: { state: ViewState }) {
  const done = state.done!;
  const failed = state.steps.filter((step) => step.status === 'failed');
  return (
    <Box flexDirection="column" marginTop={1}>
      <Text bold color={done.ok ? 'green' : 'red'}>
        {done.ok ? 'PASSED' : 'FAILED'} in {formatDuration(done.ms)} ·{' '}
        {state.steps.filter((step) => step.status === 'passed').length}/{state.steps.length} steps
      </Text>
      {failed.map((step) => (
        <Text key={step.index} color="red">{`  ${step.name}: ${step.error ?? 'failed'}`}</Text>
      ))}
      {/* The count `assert: reboots` checks: boots the guest reported, less one. */}
      {state.nodes.map((node) => (
        <Text
          key={node.name}
        >{`  ${node.name}: ${node.from ?? '?'} → ${node.current ?? '?'} (${Math.max(0, node.boots - 1)} reboot(s))`}</Text>
      ))}
    </Box>
  );
}

/** The guest's own account under the registry's bar: layers and bytes while pulling, steps after. */
function guestText(guest: NonNullable<NodeView['guest']>): string {
  const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
  if (guest.task === 'pulling')
    return `pulling ${guest.steps}/${guest.stepsTotal} layers${guest.bytesTotal ? ` · ${mib(guest.bytes ?? 0)}/${mib(guest.bytesTotal)} MiB` : ''}`;
  return `${guest.task} ${guest.steps}/${guest.stepsTotal}`;
}

function bar(sent: number, total: number): string {
  const filled = Math.round((percent(sent, total) / 100) * BAR_WIDTH);
  return `[${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)}]`;
}

export function formatClock(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
}

/**
 * A console line as the terminal will show it: tabs expanded (kernel messages contain them; Ink measures a tab
 * as zero columns while the terminal moves to the next tab stop, so the line wraps, Ink's line count goes wrong
 * and stale frames are left on screen), other control characters dropped.
 */
export function displayLine(line: string): string {
  let out = '';
  for (const char of line.replace(/[\x00-\x08\x0a-\x1f\x7f]/g, '')) {
    out += char === '\t' ? ' '.repeat(8 - (out.length % 8)) : char;
  }
  return out;
}

function truncate(text: string, width: number): string {
  return text.length > width ? `${text.slice(0, width - 1)}…` : text;
}
