import { installErrorHandler } from './errors.js';
import { libvirt, type Ptr, registerCallback } from './ffi.js';

/**
 * libvirt's default event loop, driven from JS: each `virEventRunDefaultImpl()` iteration blocks on a libuv worker
 * thread (koffi `.async`) and the loop re-arms itself when the iteration returns. libvirt callbacks (domain events,
 * stream readiness, connection close) fire inside an iteration; koffi hands them to the main thread.
 *
 * Stopping: a libvirt timeout, normally disabled, is set to fire immediately; the blocked iteration wakes, returns,
 * and the loop does not re-arm, so no worker stays busy and the process can exit. The loop runs while at least one
 * connection holds it (keepalive, close detection and events all need it).
 */
class EventLoop {
  #registered = false;
  #users = 0;
  #running: Promise<void> | undefined;
  #stopRequested = false;
  #wakeTimer = -1;
  #wakeCallback: Ptr | undefined;
  #iterations = 0;

  get iterations(): number {
    return this.#iterations;
  }

  get running(): boolean {
    return this.#running !== undefined;
  }

  /** Register the default implementation (once per process, before any connection opens) and run the loop. */
  acquire(): void {
    const lib = libvirt();
    installErrorHandler();
    if (!this.#registered) {
      if (lib.virEventRegisterDefaultImpl() < 0) throw new Error('virEventRegisterDefaultImpl failed');
      this.#wakeCallback = registerCallback('virEventTimeoutCallback', () => {});
      this.#wakeTimer = lib.virEventAddTimeout(-1, this.#wakeCallback, null, null);
      this.#registered = true;
    }
    this.#users += 1;
    if (!this.#running) this.#running = this.#spin();
  }

  /** Drop one user; the last one stops the loop and waits until its worker thread is free. */
  async release(): Promise<void> {
    this.#users = Math.max(0, this.#users - 1);
    if (this.#users > 0 || !this.#running) return;
    this.#stopRequested = true;
    libvirt().virEventUpdateTimeout(this.#wakeTimer, 0);
    await this.#running;
  }

  #spin(): Promise<void> {
    const lib = libvirt();
    return new Promise<void>((resolve) => {
      const iterate = () => {
        lib.virEventRunDefaultImpl.async((error: unknown, result: number) => {
          this.#iterations += 1;
          if (this.#stopRequested) {
            lib.virEventUpdateTimeout(this.#wakeTimer, -1);
            this.#stopRequested = false;
            if (this.#users === 0) {
              this.#running = undefined;
              return resolve();
            }
          }
          // A failing iteration must not become a busy loop.
          if (error || result < 0) setTimeout(iterate, 100);
          else iterate();
        });
      };
      iterate();
    });
  }
}

export const eventLoop = new EventLoop();
