/**
 * The `pivot: { node, to }` step on a running node: what a second update request does there, sent over ssh as a
 * script run by root (`sudo -n`, as the `core` user may on RHCOS/FCOS). devpivot has no agent in the guest.
 *
 * legacy (RHCOS 4.1–4.5): the machine-config daemon's `RunPivot` (openshift/machine-config-operator release-4.1
 * `f56d736e`, `pkg/daemon/rpm-ostree.go`; the same in release-4.5 `f0034240`):
 *   1. write the pullspec to /etc/pivot/image-pullspec (mode 0644, no newline: `ioutil.WriteFile`);
 *   2. delete /run/pivot/reboot-needed ("we always want the MCD to be in control of reboots"), so pivot itself
 *      does not reboot (openshift/pivot `cmd/root.go` reboots only with --reboot or that file);
 *   3. `systemctl start pivot.service`, which waits for the oneshot unit to finish and fails when pivot fails;
 *   4. then the MCD reboots (`update.go` `updateOSAndReboot` → `reboot`: `systemd-run --unit
 *      machine-config-daemon-reboot --description "machine-config-daemon: …" reboot`).
 * The MCD compares the booted image with the new one first and skips all of this when they match; devpivot asks
 * pivot anyway (that is what `multi-hop`'s second request tests: pivot says "Already at target pivot; exiting..."), and
 * reboots only when a deployment was staged (ostree's /run/ostree/staged-deployment), as the MCD's reboot follows
 * an OS change.
 *
 * Each driver's `secondRequest` (src/drivers/) gives the update commands; rpm-ostree and bootc run what their
 * first-boot unit runs. The reboot that follows is the same for all.
 */
import { DRIVERS, type PivotDriver } from '../drivers/index.js';

/** Printed by the script just before it asks for the reboot: after it, a dropped ssh connection is expected. */
export const REBOOT_MARKER = 'devpivot: rebooting into the staged deployment';

/** Run the script as root whether the ssh user is root or a sudoer (`core` on RHCOS/FCOS). */
export const AS_ROOT = 'if [ "$(id -u)" -eq 0 ]; then exec sh -s; else exec sudo -n sh -s; fi';

/** One single-quoted shell word. */
export function quoteShell(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** The script for `driver` that makes the node pivot to `pullspec` (an oscontainer named `to`). */
export function pivotRequestScript(driver: PivotDriver, pullspec: string, to: string): string {
  return updateRequestScript(DRIVERS[driver].secondRequest(pullspec, quoteShell), to);
}

/** The update `commands` (a pivot's or an upgrade's), then the reboot when they staged a deployment. */
export function updateRequestScript(commands: string[], to: string): string {
  const description = `machine-config-daemon: Node will reboot into ${to} (devpivot pivot step)`;
  return [
    'set -e',
    ...commands,
    'if [ -e /run/ostree/staged-deployment ]; then',
    `  echo ${quoteShell(REBOOT_MARKER)}`,
    `  systemd-run --unit machine-config-daemon-reboot --description ${quoteShell(description)} reboot`,
    'else',
    "  echo 'devpivot: nothing was staged; no reboot'",
    'fi',
    '',
  ].join('\n');
}

/** Printed by the finalize script before the tool: after it, a dropped ssh connection is the tool's reboot. */
export const APPLY_MARKER = 'devpivot: applying the staged deployment';

/**
 * A download-only upgrade's `commands`, and no reboot: the deployment they staged is finalization-locked, so a
 * shutdown would not apply it anyway; `finalize` applies it.
 */
export function stageLaterScript(commands: string[]): string {
  return ['set -e', ...commands, "echo 'devpivot: staged for later; no reboot'", ''].join('\n');
}

/** The apply `commands` (which unlock the staged deployment and reboot), after the marker. */
export function applyStagedScript(commands: string[]): string {
  return ['set -e', `echo ${quoteShell(APPLY_MARKER)}`, ...commands, ''].join('\n');
}
