/**
 * `- ssh: { node, run, expect, within }`: run a shell command on a running node over ssh (as `core`, with the
 * session's key) until its output matches `expect`, or, without `expect`, until it exits 0. The command runs
 * again every few seconds while it does not hold, also while the node's sshd does not answer yet (it may still be
 * booting), and the step fails at `within` with the last exit status and output. A node failing meanwhile fails
 * the step at once.
 */
import { DEFAULT_WITHIN_MS, type StepBase, type StepDefinition } from './definition.js';
import type { StepReader, StepSource } from './reader.js';
import { SSH_FAILED, type SshResult, StepFailure } from './runtime.js';
import { formatDuration } from './units.js';

export interface SshStep extends StepBase {
  kind: 'ssh';
  node: string;
  /** A shell command line, run by the node's login shell. */
  run: string;
  /** A regular expression the output (stdout and stderr) must match; absent: the exit status must be 0. */
  expect?: string;
  withinMs: number;
}

/** Between two tries of the command. */
export const SSH_RETRY_MS = 3000;

/** Label `ssh node1 'cat /etc/os-release' =~ /VERSION/ within 2m`. */
export function sshStep(fields: Omit<SshStep, 'kind' | 'label'>): SshStep {
  const { node, run, expect, withinMs } = fields;
  const command = run.length > 60 ? `${run.slice(0, 57)}...` : run;
  const check = expect === undefined ? 'exits 0' : `=~ /${expect}/`;
  return { kind: 'ssh', ...fields, label: `ssh ${node} '${command}' ${check} within ${formatDuration(withinMs)}` };
}

export const ssh: StepDefinition<SshStep> = {
  needsSsh: true,
  schema: { keys: ['node', 'run', 'expect', 'within'], required: ['run'], nodes: 'needs-running' },
  parse({ body, pos }: StepSource, read: StepReader) {
    const f = read.fields(body, 'ssh', ssh.schema.keys, ssh.schema.required);
    const node = read.node(f.get('node')?.value, body);
    const run = read.string(f.get('run')!.value, 'ssh.run');
    if (run.trim() === '') read.fail(f.get('run')!.value, 'ssh.run is empty', 'write the command to run on the node');
    const expect = f.has('expect') ? read.regex(f.get('expect')!.value, 'ssh.expect') : undefined;
    const withinMs = f.has('within') ? read.duration(f.get('within')!.value, 'ssh.within') : DEFAULT_WITHIN_MS;
    return sshStep({ node, run, ...(expect !== undefined ? { expect } : {}), withinMs, pos });
  },
  nodesOf: (step) => [step.node],
  async run(step, runtime) {
    const pattern = step.expect === undefined ? undefined : new RegExp(step.expect);
    const holds = (result: SshResult) =>
      result.code !== SSH_FAILED && (pattern ? pattern.test(result.output) : result.code === 0);
    const deadline = Date.now() + step.withinMs;
    let last: SshResult | undefined;
    let finished: SshResult | undefined;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      last = await runtime.ssh(step.node, step.run, { timeoutMs: left });
      if (holds(last)) return;
      if (last.code !== null) finished = last;
      const wait = Math.min(SSH_RETRY_MS, deadline - Date.now());
      if (wait <= 0) break;
      await runtime.pause(wait);
    }
    throw new StepFailure(describe(step, last, finished));
  },
};

/**
 * `ssh node1 'cmd': no output matching /re/ within 2m; last try: exit status 1, output: …`. When the deadline cut
 * the last try short, the last finished one follows (`last finished try: …`): what did not match, not just a command
 * stopped half-way.
 */
function describe(step: SshStep, last: SshResult | undefined, finished: SshResult | undefined): string {
  const what = step.expect === undefined ? 'no exit status 0' : `no output matching /${step.expect}/`;
  const head = `ssh ${step.node} '${step.run}': ${what} within ${formatDuration(step.withinMs)}`;
  if (!last) return head;
  const tried = `${head}; last try: ${outcome(last)}`;
  return last.code === null && finished ? `${tried}\nlast finished try: ${outcome(finished)}` : tried;
}

/** `exit status 1, output:\n…` (the output's last 5 lines). */
function outcome(result: SshResult): string {
  const status =
    result.code === null
      ? 'still running'
      : result.code === SSH_FAILED
        ? 'ssh could not connect'
        : `exit status ${result.code}`;
  const output = result.output.trim().split('\n').slice(-5).join('\n');
  return `${status}${output ? `, output:\n${output}` : ''}`;
}
