import { DevpivotError } from '../../core/errors.js';
import { DEVPIVOT_XMLNS, domainName, parseMetadataElement } from '../domain-xml.js';
import { ownsDomain } from '../owner.js';
import { type Connection, ConsoleFlag } from './connection.js';
import { LibvirtError } from './errors.js';

/** Ctrl-] detaches, as in virsh console and telnet. */
export const DETACH_BYTE = 0x1d;

export interface AttachIo {
  input: NodeJS.ReadableStream & { setRawMode?: (raw: boolean) => unknown; isTTY?: boolean };
  output: NodeJS.WritableStream;
  signal: AbortSignal;
}

/**
 * Connect the terminal to a node's serial console until Ctrl-], the end of the console (domain stopped) or the
 * abort signal. Without `force` an existing console reader (a running devpivot) is left alone and this fails
 * with CONSOLE_BUSY; with `force` it is taken over, and the running devpivot re-attaches after the detach.
 * Resolves with why it ended.
 */
export async function attachConsole(
  conn: Connection,
  session: string,
  node: string,
  io: AttachIo,
  options: { force?: boolean } = {},
): Promise<'detached' | 'ended' | 'aborted'> {
  const name = domainName(session, node);
  const domain = await conn.lookupDomain(name);
  if (!domain) throw new DevpivotError('VM_NOT_FOUND', `no node ${node} in session ${session} on ${conn.uri}`);
  const stream = conn.newStream(true);
  try {
    const meta = parseMetadataElement((await domain.metadata(DEVPIVOT_XMLNS)) ?? '');
    if (!meta) throw new DevpivotError('VM_NOT_DEVPIVOT', `domain ${name} was not created by devpivot`);
    if (!ownsDomain(meta.owner, conn.uri))
      throw new DevpivotError('VM_NOT_FOUND', `no node ${node} of yours in session ${session} on ${conn.uri}`, {
        hint: `${name} was started by another user (uid ${meta.owner ?? 0}); see your own with \`devpivot ps\``,
      });
    if (!(await domain.isActive()))
      throw new DevpivotError('VM_NOT_RUNNING', `node ${node} (${name}) is not running`, {
        hint: `read what it printed with \`devpivot logs ${node} --session ${session}\``,
      });
    try {
      await domain.openConsole(stream, options.force ? ConsoleFlag.force : 0);
    } catch (error) {
      if (error instanceof LibvirtError && /active console session/i.test(error.libvirt.message))
        throw new DevpivotError('CONSOLE_BUSY', `the console of ${node} is in use (a running devpivot reads it)`, {
          hint: `follow it with \`devpivot logs ${node} -f\`, or take it over with --force`,
          cause: error,
        });
      throw error;
    }
  } catch (error) {
    stream.free();
    throw error;
  } finally {
    domain.free();
  }

  return await new Promise((resolve) => {
    const pending: Buffer[] = [];
    let done = false;
    const wasRaw = Boolean(io.input.isTTY && io.input.setRawMode);
    const finish = (why: 'detached' | 'ended' | 'aborted') => {
      if (done) return;
      done = true;
      clearInterval(flusher);
      stopReading();
      io.input.off('data', onInput);
      io.signal.removeEventListener('abort', onAbort);
      if (wasRaw) io.input.setRawMode?.(false);
      io.input.pause();
      setImmediate(() => void stream.close().then(() => resolve(why)));
    };
    const flush = () => {
      while (pending.length > 0 && !done) {
        const chunk = pending[0]!;
        const sent = stream.trySend(chunk);
        if (sent === 0) return;
        if (sent < chunk.length) pending[0] = chunk.subarray(sent);
        else pending.shift();
      }
    };
    const onInput = (data: Buffer | string) => {
      const bytes = typeof data === 'string' ? Buffer.from(data) : data;
      const cut = bytes.indexOf(DETACH_BYTE);
      if (cut >= 0) {
        if (cut > 0) pending.push(bytes.subarray(0, cut));
        flush();
        return finish('detached');
      }
      pending.push(bytes);
      flush();
    };
    const onAbort = () => finish('aborted');
    const flusher = setInterval(flush, 50);
    const stopReading = stream.readEvents(
      (chunk) => io.output.write(chunk),
      () => setImmediate(() => finish('ended')),
    );
    if (wasRaw) io.input.setRawMode?.(true);
    io.input.on('data', onInput);
    io.input.resume();
    io.signal.addEventListener('abort', onAbort, { once: true });
  });
}
