import type { EventBus } from '../core/bus.js';
import type { CommandContext } from './command.js';

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

/**
 * Show `image.progress` on stderr: one rewritten line on a TTY, else a plain line per 10% step (logs stay
 * short). Returns a function that ends the display.
 */
export function showImageProgress(bus: EventBus, stderr: CommandContext['stderr']): () => void {
  const tty = stderr.isTTY === true;
  const lastStep = new Map<string, number>();
  let dirty = false;
  const off = bus.on('image.progress', (event) => {
    const percent = event.total ? Math.floor((event.done / event.total) * 100) : null;
    const text = `${event.phase}: ${percent === null ? '…' : `${percent}%`} (${event.total ? `${mb(event.done)} / ${mb(event.total)}` : mb(event.done)})`;
    if (tty) {
      stderr.write(`\r\x1b[2K${text}`);
      dirty = true;
      return;
    }
    const step = percent === null ? -1 : Math.floor(percent / 10);
    if (lastStep.get(event.phase) === step) return;
    lastStep.set(event.phase, step);
    stderr.write(`${text}\n`);
  });
  return () => {
    off();
    if (tty && dirty) stderr.write('\r\x1b[2K');
  };
}
