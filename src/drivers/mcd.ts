/**
 * `mcd`: RHCOS ≥ 4.6, what the machine-config server of OpenShift 4.13 serves a new node; its machine-config
 * daemon pivots on the first boot (docs/PROTOCOLS.md "mcd"; the fragment is ignition/mcd-fragment.ts).
 */
import { MCD_PULL_SECRET_PATH, mcdFragment } from '../ignition/mcd-fragment.js';
import type { DriverDefinition } from './definition.js';
import { RPM_OSTREE_ROLLBACK } from './rollback.js';
import { updateUnitNoReboot } from './update-unit.js';

export const mcd: DriverDefinition = {
  // The MCD of release-4.13 handles both (pkg/daemon/update.go applyOSChanges, a57ca291).
  formats: ['legacy', 'native'],
  specs: { default: '3.0.0', majors: [3], guests: 'RHCOS ≥ 4.6 (Ignition 2.x, served spec 3 by the MCS)' },
  // At firstboot the old MachineConfig is empty: MCO only appends spec.kernelArguments (update.go, a57ca291).
  kernelArgs: {
    add: true,
    delete: false,
    refusal: {
      message: 'of the mcd driver can only add (a MachineConfig lists spec.kernelArguments)',
      hint: 'drop the delete list',
    },
  },
  nodeKeys: ['mco-image'],
  // RHCOS 4.13's rpm-ostree predates ostree-ext's zstd reader (0.13.4); the fragment tells the fixture's importer.
  readsZstdLayers: false,
  // The pull unit's `podman pull --authfile=` and the MCD's image pulls (pkg/daemon/constants/constants.go
  // KubeletAuthFile, a57ca291): the file the MCS renders from the cluster's pull secret.
  pullSecretPaths: [MCD_PULL_SECRET_PATH],
  // The MCD of 4.13 takes both formats by tag or digest; its MachineConfig is what the MCS would serve.
  fragment: (image, kernelArgs, options) => mcdFragment(image, kernelArgs, options.mcoImage),
  // Past firstboot the MCD updates a node when the cluster renders a new MachineConfig: there is no cluster
  // here, so a later pivot goes through rpm-ostree, as the MCD's own rebase of a native image does.
  secondRequest: (pullspec, quote) => [
    `rpm-ostree rebase --experimental ${quote(`ostree-unverified-registry:${pullspec}`)}`,
  ],
  noRebootReason: ({ what }) => updateUnitNoReboot(what),
  rollback: RPM_OSTREE_ROLLBACK,
  // The MCD updates the OS only when osImageURL changes (machine-config-operator pkg/daemon/update.go
  // NewMachineConfigDiff: osUpdate is the osImageURL strings differing): a tag that moves changes nothing.
  upgrade: {
    follows: 'digest',
    why: 'the machine-config daemon updates the OS only when osImageURL changes, so an upgrade is a new osImageURL',
    request(pullspec, quote) {
      return mcd.secondRequest(pullspec, quote);
    },
    // pkg/daemon/update.go updateOSAndReboot: the rebase, then the reboot, in one update
    later: { refused: 'the machine-config daemon applies an OS update and reboots in one go' },
  },
};
