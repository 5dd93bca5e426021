import { DevpivotError, ExitCode, UsageError } from '../../core/errors.js';
import { runInteractive } from '../../core/exec.js';
import { stateDir } from '../../core/paths.js';
import { remoteDestination } from '../../engine/remote-host.js';
import { knowsHostKeys, readSessionKey, sshArgs } from '../../engine/ssh.js';
import { Connection } from '../../vm/libvirt/connection.js';
import { listDevpivotDomains } from '../../vm/libvirt/inventory.js';
import { assertValidSessionId } from '../../vm/sessions.js';
import { resolveTarget } from '../../vm/targets.js';
import { type Command, connectOption } from '../command.js';

export const command: Command = {
  name: 'ssh',
  summary: 'Log in to a node over ssh, or run a command there (as core)',
  usage: 'NODE [-- COMMAND [ARG...]] [--session ID] [--connect URI]',
  description:
    'Connect to NODE (of the last session, or --session ID) as the user core with the session’s own key, through\n' +
    'the port on 127.0.0.1 its VM forwards to the guest’s port 22 (shown by `devpivot ps`); on a qemu+ssh:// host,\n' +
    'through that host’s ssh login (the URI’s user, port and keyfile) to the port on its loopback. Without a command:\n' +
    'an interactive login; with one (after --): runs it there and exits with its exit status (255: ssh failed).\n' +
    'Works for the fixture and for any RHCOS/FCOS node devpivot created: Ignition gave core the session key.\n' +
    'Each node’s host keys are made by devpivot and given by Ignition, recorded in the session’s own known_hosts\n' +
    'before it boots: any other key is refused. A node whose own Ignition writes host keys has its key learnt at\n' +
    'first contact instead.',
  options: {
    session: { type: 'string', valueName: 'ID', description: 'Session of the node (default: the last one)' },
    connect: connectOption('LIBVIRT_DEFAULT_URI, else the session’s, else qemu:///system for root'),
  },
  positionals: [1, Number.POSITIVE_INFINITY],
  async run({ args, env }) {
    const [node, ...remote] = args.positionals as [string, ...string[]];
    const sessionId = args.string('session');
    if (sessionId) assertValidSessionId(sessionId);
    const state = stateDir(env);
    const target = await resolveTarget({ connect: args.string('connect'), session: sessionId, env, stateDir: state });
    if (!target.session)
      throw new UsageError('no devpivot session is recorded on this machine', 'pass --session ID (see `devpivot ps`)');
    const session = target.session.id;
    // A node on a remote host forwards its port 22 to that host's loopback: reached through the URI's ssh login.
    const via = remoteDestination(target.uri);
    const conn = await Connection.open(target.uri);
    let forward: string | undefined;
    let domain: string;
    try {
      const found = (await listDevpivotDomains(conn)).find((d) => d.session === session && d.node === node);
      if (!found)
        throw new DevpivotError('VM_NOT_FOUND', `session ${session} has no node '${node}' on ${target.uri}`, {
          hint: 'see devpivot ps',
          exitCode: ExitCode.usage,
        });
      if (!found.active)
        throw new DevpivotError('VM_NOT_RUNNING', `node ${node} of session ${session} is ${found.state}`, {
          exitCode: ExitCode.usage,
        });
      forward = found.ssh;
      domain = found.name;
    } finally {
      await conn.close();
    }
    const port = Number(/^127\.0\.0\.1:(\d+)$/.exec(forward ?? '')?.[1]);
    if (!port)
      throw new DevpivotError('SSH_NO_FORWARD', `node ${node} of session ${session} has no ssh port forward`, {
        exitCode: ExitCode.usage,
      });
    const key = await readSessionKey(state, session);
    if (!key)
      throw new DevpivotError('SSH_NO_KEY', `session ${session} has no ssh key in ${state}`, {
        exitCode: ExitCode.usage,
      });
    const result = await runInteractive(
      'ssh',
      // Keys on record (devpivot's own for the node, or learnt before): no other is accepted.
      sshArgs(
        { session: key, alias: domain, port, pinned: await knowsHostKeys(key, domain), ...(via ? { via } : {}) },
        { command: remote },
      ),
    );
    if (result.spawnError)
      throw new DevpivotError('SSH_MISSING', `cannot run ssh: ${result.spawnError.message}`, {
        exitCode: ExitCode.usage,
      });
    return result.code ?? ExitCode.failure;
  },
};
