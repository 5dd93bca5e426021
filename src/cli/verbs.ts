import type { Command } from './command.js';

/**
 * Every verb, with the one-line summary shown by `devpivot --help`. Modules load lazily so that `--help` and
 * simple verbs start fast; a verb's options live in its own module.
 */
export interface Verb {
  name: string;
  summary: string;
  load: () => Promise<{ command: Command }>;
}

export const verbs: Verb[] = [
  {
    name: 'up',
    summary: 'Run a scenario live: registry, images, VMs, pivot (default: old-to-new)',
    load: () => import('./commands/up.js'),
  },
  {
    name: 'run',
    summary: 'Run scenario files non-interactively (CI): plain lines, --json, --junit',
    load: () => import('./commands/run.js'),
  },
  { name: 'doctor', summary: 'Check that this machine can run devpivot', load: () => import('./commands/doctor.js') },
  {
    name: 'images',
    summary: 'Build or list the embedded fixture OS images',
    load: () => import('./commands/images.js'),
  },
  {
    name: 'registry',
    summary: 'Run the embedded OCI registry, or collect its garbage',
    load: () => import('./commands/registry.js'),
  },
  {
    name: 'build',
    summary: 'Build an oscontainer from an ostree commit and push it',
    load: () => import('./commands/build.js'),
  },
  {
    name: 'pull',
    summary: 'Copy an image between registries (or into an OCI layout), keeping digests',
    load: () => import('./commands/pull.js'),
  },
  {
    name: 'ignition',
    summary: 'Print the Ignition config that makes a node pivot to an image',
    load: () => import('./commands/ignition.js'),
  },
  { name: 'ps', summary: "List devpivot's VMs (every session, or one)", load: () => import('./commands/ps.js') },
  {
    name: 'down',
    summary: "Remove devpivot's VMs and volumes (last session, one session, or all)",
    load: () => import('./commands/down.js'),
  },
  {
    name: 'ssh',
    summary: 'Log in to a node over ssh, or run a command there (as core)',
    load: () => import('./commands/ssh.js'),
  },
  {
    name: 'console',
    summary: "Attach to a node's serial console (Ctrl-] detaches)",
    load: () => import('./commands/console.js'),
  },
  { name: 'logs', summary: "Print a node's console log (-f follows it)", load: () => import('./commands/logs.js') },
];
