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
  { name: 'doctor', summary: 'Check that this machine can run devpivot', load: () => import('./commands/doctor.js') },
  {
    name: 'registry',
    summary: 'Run the embedded OCI registry, or collect its garbage',
    load: () => import('./commands/registry.js'),
  },
];
