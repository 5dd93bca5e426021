/** `bootc`: bootc images with Ignition, switched by `bootc switch` from devpivot's own first-boot unit. */
import { UsageError } from '../core/errors.js';
import { FINALIZE_STAGED_UNIT } from '../ignition/fragment.js';
import type { DriverDefinition } from './definition.js';
import { BOOTC_ROLLBACK } from './rollback.js';
import { updateUnitFragment, updateUnitNoReboot } from './update-unit.js';

const NO_KARGS = 'bootc images carry their kernel arguments in /usr/lib/bootc/kargs.d';

export const bootc: DriverDefinition = {
  formats: ['native'],
  specs: { default: '3.0.0', majors: [3], guests: 'bootc images with Ignition (Fedora CoreOS ≥ 41, Ignition 2.x)' },
  kernelArgs: {
    add: false,
    delete: false,
    refusal: { message: `cannot be set by the bootc driver (${NO_KARGS})`, hint: 'drop kernel-args' },
  },
  nodeKeys: [],
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
      [`/usr/bin/bootc switch ${image}`],
    );
    fragment.units.push(FINALIZE_STAGED_UNIT);
    return fragment;
  },
  secondRequest: (pullspec, quote) => [`bootc switch ${quote(pullspec)}`],
  noRebootReason: ({ what }) => updateUnitNoReboot(what),
  rollback: BOOTC_ROLLBACK,
  upgrade: { follows: 'tag', request: () => ['bootc upgrade'] },
};
