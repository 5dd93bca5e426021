/** `bootc`: bootc images with Ignition, switched by `bootc switch` from devpivot's own first-boot unit. */
import { UsageError } from '../core/errors.js';
import { FINALIZE_STAGED_UNIT } from '../ignition/fragment.js';
import type { DriverDefinition } from './definition.js';
import { BOOTC_ROLLBACK } from './rollback.js';
import { BOOTC_STAGED_LATER } from './staged-later.js';
import { updateUnitFragment, updateUnitNoReboot } from './update-unit.js';

const NO_KARGS = 'bootc images carry their kernel arguments in /usr/lib/bootc/kargs.d';

/** The FIFO bootc writes its progress to (tokio's pipe Sender refuses anything but a pipe). */
const PROGRESS_FIFO = '/run/devpivot-progress';

/**
 * `bootc switch --progress-fd 3 IMAGE` with fd 3 a FIFO whose reader prints each JSON line on the console behind
 * `devpivot-progress: ` (engine/guest-progress.ts reads it), bootc's exit status kept. `$$` and `%%` are systemd's `$` and `%` (a bare `%s` would be a specifier).
 */
export function switchWithProgress(image: string): string {
  const relay = `{ while IFS= read -r l; do printf "devpivot-progress: %%s\\n" "$$l" >/dev/console; done <$$p; } &`;
  return [
    `/bin/sh -c 'p=${PROGRESS_FIFO}; rm -f $$p; mkfifo -m 0600 $$p || exit 1; ${relay}`,
    `/usr/bin/bootc switch --progress-fd 3 ${image} 3>$$p; rc=$$?; wait; rm -f $$p; exit $$rc'`,
  ].join(' ');
}

export const bootc: DriverDefinition = {
  formats: ['native'],
  specs: { default: '3.0.0', majors: [3], guests: 'bootc images with Ignition (Fedora CoreOS ≥ 41, Ignition 2.x)' },
  kernelArgs: {
    add: false,
    delete: false,
    refusal: { message: `cannot be set by the bootc driver (${NO_KARGS})`, hint: 'drop kernel-args' },
  },
  nodeKeys: [],
  // ostree-ext's tar+zstd reader (crates/ostree-ext/src/generic_decompress.rs, bootc-dev/bootc 534c76ea)
  readsZstdLayers: true,
  // ostree-ext's global auth file, first of /run/ostree, /etc/ostree, /usr/lib/ostree (bootc-dev/bootc
  // crates/ostree-ext/src/globals.rs get_global_authfile, 5cfbed3f); /run is not kept across the pivot's reboot.
  pullSecretPaths: ['/etc/ostree/auth.json'],
  fragment(image, kernelArgs) {
    if (kernelArgs.length > 0) {
      throw new UsageError(
        'the bootc driver cannot set kernel arguments',
        `${NO_KARGS}; drop --kernel-arg`,
        'IGNITION_KERNEL_ARG',
      );
    }
    const fragment = updateUnitFragment(
      'devpivot-switch.service',
      'devpivot: switch to the target bootc image and reboot',
      [switchWithProgress(image)],
    );
    fragment.units.push(FINALIZE_STAGED_UNIT);
    return fragment;
  },
  secondRequest: (pullspec, quote) => [`bootc switch ${quote(pullspec)}`],
  noRebootReason: ({ what }) => updateUnitNoReboot(what),
  rollback: BOOTC_ROLLBACK,
  upgrade: { follows: 'tag', request: () => ['bootc upgrade'], later: BOOTC_STAGED_LATER },
};
