/** The accelerator probe on a qemu+ssh host, run over the URI's own login (`REMOTE_ACCEL_SCRIPT`). */
import { type AccelProbe, REMOTE_ACCEL_SCRIPT, remoteAccelAnswer } from '../accel.js';
import { runRemote } from './remote-command.js';
import { sshDestinationOf } from './ssh-destination.js';

/** KVM or TCG on the remote host; undefined where the probe proves nothing (another transport, no access). */
export async function probeRemoteAccel(uri: string): Promise<AccelProbe | undefined> {
  const destination = sshDestinationOf(uri);
  if (!destination) return undefined;
  const result = await runRemote(destination, ['sh', '-c', REMOTE_ACCEL_SCRIPT], { timeoutMs: 30_000 });
  return remoteAccelAnswer(result.code, result.output);
}
