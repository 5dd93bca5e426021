import type { Stamped } from '../core/events.js';
import { stepNames } from '../engine/engine.js';
import type { Scenario } from '../scenario/types.js';

/** The interactive view's state: a pure fold of bus events and key presses (no I/O, unit-tested). */
export interface NodeView {
  name: string;
  /**
   * defined, booting, ignition, booted, pulling, importing, staging, staged, rebooting, skipped, failed, stopped,
   * ... `importing` is the view's own: the pull's largest blob has been sent in full and the guest is checking and
   * importing it (its next report is `staging`), which a frozen "pulling 100 %" hid.
   */
  phase: string;
  /** Version of the first boot, and of the latest one. */
  from?: string;
  current?: string;
  /** The pivot target as the scenario names it (an oscontainer). */
  target?: string;
  /**
   * Download progress of the node's pull (its largest blob), from the registry's blob.progress events that name
   * this node (its own port of the embedded registry).
   */
  progress?: { sent: number; total: number };
  /** What the guest's update tool says of its own progress (guest.progress): its task, steps and bytes. */
  guest?: { task: string; steps: number; stepsTotal: number; bytes?: number; bytesTotal?: number };
  boots: number;
  /** Reboots and restarts seen from the host (vm.reboot, a start after a stop): counted when they happen. */
  reboots: number;
  startedAt?: number;
  failure?: string;
  /**
   * greenboot's verdict on the node's latest checked boot (guest.health); `check`: the required check that failed
   * (kept across the boots GRUB then counts down).
   */
  health?: { ok: boolean; check?: string };
  /** GRUB's counter ran out and greenboot rolled the node back (guest.fallback): the node is on its old version. */
  fallback?: { tool: string };
  console: string[];
}

export interface StepView {
  index: number;
  name: string;
  status: 'pending' | 'running' | 'passed' | 'failed';
  ms?: number;
  error?: string;
}

export interface ViewState {
  scenario: string;
  registryUrl?: string;
  startedAt?: number;
  /** Time of the latest event (the header's clock when nothing else ticks). */
  now: number;
  nodes: NodeView[];
  steps: StepView[];
  selected: number;
  showConsole: boolean;
  /** A short line about set-up work (builds, fixture). */
  activity?: string;
  done?: { ok: boolean; ms: number };
  quitting?: 'cleanup' | 'keep';
}

export type Action =
  | { type: 'event'; event: Stamped }
  | { type: 'select'; delta: number }
  | { type: 'toggle-console' }
  | { type: 'quit'; keep: boolean }
  | { type: 'tick'; now: number };

export const CONSOLE_LINES = 12;

export function initialView(scenario: Scenario): ViewState {
  return {
    scenario: scenario.name,
    now: 0,
    nodes: scenario.nodes.map((node) => ({
      name: node.name,
      phase: 'waiting',
      ...(node.pivot ? { target: node.pivot } : {}),
      boots: 0,
      reboots: 0,
      console: [],
    })),
    steps: stepNames(scenario).map((name, index) => ({ index, name, status: 'pending' })),
    selected: 0,
    showConsole: true,
  };
}

export function reduce(state: ViewState, action: Action): ViewState {
  switch (action.type) {
    case 'select': {
      const count = state.nodes.length;
      return count === 0 ? state : { ...state, selected: (state.selected + action.delta + count) % count };
    }
    case 'toggle-console':
      return { ...state, showConsole: !state.showConsole };
    case 'quit':
      return { ...state, quitting: action.keep ? 'keep' : 'cleanup' };
    case 'tick':
      return { ...state, now: action.now };
    case 'event':
      return onEvent({ ...state, now: Math.max(state.now, action.event.at) }, action.event);
  }
}

function updateNode(state: ViewState, name: string, update: (node: NodeView) => NodeView): ViewState {
  if (!state.nodes.some((node) => node.name === name)) return state;
  return { ...state, nodes: state.nodes.map((node) => (node.name === name ? update(node) : node)) };
}

function updateStep(state: ViewState, index: number, update: (step: StepView) => StepView): ViewState {
  return { ...state, steps: state.steps.map((step) => (step.index === index ? update(step) : step)) };
}

function onEvent(state: ViewState, event: Stamped): ViewState {
  switch (event.kind) {
    case 'run.start':
      return { ...state, startedAt: event.at };
    case 'run.end':
      return { ...state, done: { ok: event.ok, ms: event.ms }, activity: undefined };
    case 'registry.listening':
      return { ...state, registryUrl: event.url };
    case 'image.progress':
      return {
        ...state,
        activity: `${event.phase} ${event.ref}${event.total ? ` ${percent(event.done, event.total)}%` : ''}`,
      };
    case 'image.built':
      return { ...state, activity: `built ${event.ref} (version ${event.version})` };
    case 'image.pushed':
      return { ...state, activity: `pushed ${event.ref}` };
    case 'log':
      return event.source === 'fixture' ? { ...state, activity: `fixture: ${event.message}` } : state;
    case 'step.start':
      return updateStep(state, event.index, (step) => ({ ...step, status: 'running' }));
    case 'step.pass':
      // Set-up chatter (builds, pushes, a disk upload) ends with the step that made it.
      return updateStep({ ...state, activity: undefined }, event.index, (step) => ({
        ...step,
        status: 'passed',
        ms: event.ms,
      }));
    case 'step.fail':
      return updateStep(state, event.index, (step) => ({
        ...step,
        status: 'failed',
        ms: event.ms,
        error: event.error,
      }));
    case 'vm.defined':
      return updateNode(state, event.node, (node) => ({ ...node, phase: 'defined' }));
    case 'vm.started':
      // A boot begins: the disk upload that preceded it is over, so its set-up line goes.
      return updateNode({ ...state, activity: undefined }, event.node, (node) => ({
        ...node,
        phase: 'booting',
        // A second start is a restart (power loss, crash): it counts like a reboot.
        reboots: node.startedAt === undefined ? node.reboots : node.reboots + 1,
        startedAt: node.startedAt ?? event.at,
        failure: undefined,
      }));
    case 'vm.reboot':
      return updateNode(state, event.node, (node) => ({ ...node, phase: 'rebooting', reboots: node.reboots + 1 }));
    case 'vm.stopped':
      return updateNode(state, event.node, (node) => ({ ...node, phase: 'stopped' }));
    case 'vm.crashed':
      return updateNode(state, event.node, (node) => ({ ...node, phase: 'crashed', failure: event.reason }));
    case 'vm.console':
      return updateNode(state, event.node, (node) => ({
        ...node,
        // libvirt's reboot event comes at the reset: what the console prints after it is the next boot.
        ...(node.phase === 'rebooting' ? { phase: 'booting' } : {}),
        console: [...node.console.slice(-(CONSOLE_LINES - 1)), event.line],
      }));
    case 'guest.ignition':
      return updateNode(state, event.node, (node) => ({
        ...node,
        phase: event.ok ? 'ignition done' : 'ignition failed',
      }));
    case 'guest.booted':
      return updateNode(state, event.node, (node) => ({
        ...node,
        phase: 'booted',
        from: node.from ?? event.version,
        current: event.version,
        boots: node.boots + 1,
      }));
    case 'guest.pivot':
      return updateNode(state, event.node, (node) => ({
        ...node,
        phase: event.phase,
        ...(event.phase === 'pulling'
          ? {}
          : { progress: node.progress ? { ...node.progress, sent: node.progress.total } : undefined }),
      }));
    case 'guest.pivot.skipped':
      return updateNode(state, event.node, (node) => ({ ...node, phase: 'already at target' }));
    case 'guest.progress':
      return updateNode(state, event.node, (node) => ({
        ...node,
        // The tool's own word: importing and staging are phases the registry's bytes cannot show.
        ...(event.task === 'importing' || event.task === 'staging' ? { phase: event.task } : {}),
        guest: {
          task: event.task,
          steps: event.steps,
          stepsTotal: event.stepsTotal,
          ...(event.bytes !== undefined ? { bytes: event.bytes, bytesTotal: event.bytesTotal ?? 0 } : {}),
        },
      }));
    case 'guest.health':
      // The node's own checks said no: GRUB will try again or fall back. A verdict, not a failure of the run.
      return updateNode(state, event.node, (node) => ({
        ...node,
        ...(event.ok ? {} : { phase: 'health check failed' }),
        health: {
          ok: event.ok,
          ...((event.check ?? node.health?.check) ? { check: event.check ?? node.health?.check } : {}),
        },
      }));
    case 'guest.fallback':
      return updateNode(state, event.node, (node) => ({ ...node, phase: 'fell back', fallback: { tool: event.tool } }));
    case 'guest.failure':
      return updateNode(state, event.node, (node) => ({ ...node, phase: 'failed', failure: event.reason }));
    case 'blob.progress': {
      // Each node pulls through a port of its own, so the event names it. One without a node came in on the main
      // port (devpivot itself, an external client): no node's pull.
      const pulling = event.node;
      if (pulling === undefined) return state;
      return updateNode(state, pulling, (node) => {
        const replace =
          !node.progress || event.total >= node.progress.total || node.progress.sent >= node.progress.total;
        if (!replace) return node;
        // The largest blob is in: the rest of the pull is the guest's checksum and import.
        const downloaded = node.phase === 'pulling' && event.total > 0 && event.sent >= event.total;
        return {
          ...node,
          progress: { sent: event.sent, total: event.total },
          ...(downloaded ? { phase: 'importing' } : {}),
        };
      });
    }
    default:
      return state;
  }
}

export function percent(done: number, total: number): number {
  return total <= 0 ? 0 : Math.min(100, Math.floor((done / total) * 100));
}
