/**
 * `rpm-ostree`: Fedora CoreOS and RHCOS ≥ 4.12, a native oscontainer rebased to by `rpm-ostree rebase` from
 * devpivot's own first-boot unit (docs/PROTOCOLS.md "rpm-ostree").
 */
import { FINALIZE_STAGED_UNIT } from '../ignition/fragment.js';
import type { DriverDefinition } from './definition.js';
import { RPM_OSTREE_ROLLBACK } from './rollback.js';
import { RPM_OSTREE_STAGED_LATER } from './staged-later.js';
import { updateUnitFragment, updateUnitNoReboot } from './update-unit.js';

const rebase = (pullspec: string) => `ostree-unverified-registry:${pullspec}`;

export const rpmOstree: DriverDefinition = {
  formats: ['native'],
  specs: { default: '3.0.0', majors: [3], guests: 'Fedora CoreOS and RHCOS ≥ 4.12 (Ignition 2.x)' },
  // `rpm-ostree kargs` after the rebase edits the staged (default) deployment, as the MCD's applyOSChanges does
  // after RebaseLayered (machine-config-operator pkg/daemon/update.go updateKernelArguments, a57ca291).
  kernelArgs: { add: true, delete: true },
  nodeKeys: [],
  // an rpm-ostree linking ostree-ext ≥ 0.13.4, whose reader takes tar+zstd (ostreedev/ostree-rs-ext 651ae79)
  readsZstdLayers: true,
  // ostree-ext's global auth file, first of /run/ostree, /etc/ostree, /usr/lib/ostree (bootc-dev/bootc
  // crates/ostree-ext/src/globals.rs get_global_authfile, 5cfbed3f); /run is not kept across the pivot's reboot.
  pullSecretPaths: ['/etc/ostree/auth.json'],
  fragment(image, kernelArgs) {
    const commands = [`/usr/bin/rpm-ostree rebase --experimental ${rebase(image)}`];
    if (kernelArgs.length > 0) {
      const flags = kernelArgs.map((k) => `${k.op === 'ADD' ? '--append' : '--delete'}=${k.arg}`);
      commands.push(`/usr/bin/rpm-ostree kargs ${flags.join(' ')}`);
    }
    const fragment = updateUnitFragment(
      'devpivot-rebase.service',
      'devpivot: rebase to the target OS image and reboot',
      commands,
    );
    fragment.units.push(FINALIZE_STAGED_UNIT);
    return fragment;
  },
  secondRequest: (pullspec, quote) => [`rpm-ostree rebase --experimental ${quote(rebase(pullspec))}`],
  noRebootReason: ({ what }) => updateUnitNoReboot(what),
  rollback: RPM_OSTREE_ROLLBACK,
  upgrade: { follows: 'tag', request: () => ['rpm-ostree upgrade'], later: RPM_OSTREE_STAGED_LATER },
};
