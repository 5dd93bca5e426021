/**
 * The `mcd` driver: what the machine-config server of OpenShift 4.13 serves a new node (docs/PROTOCOLS.md "mcd").
 * The node's machine-config daemon then pivots on its first boot, run from the MCO image by podman.
 *
 * Upstream, openshift/machine-config-operator release-4.13 (a57ca291): `pkg/server/server.go` `appendEncapsulated`
 * (the MachineConfig with `spec.config` emptied to an Ignition config holding only its version),
 * `templates/common/_base/units/{machine-config-daemon-pull.service.yaml, machine-config-daemon-firstboot.service.yaml,
 * firstboot-osupdate.target}` (the units, byte for byte but for `{{ .Images.machineConfigOperator }}`; no Proxy),
 * `templates/common/_base/files/pull-secret.yaml` (mode 0600), `pkg/daemon/constants/constants.go` (the paths),
 * `appendKubeConfig` (the node's kubeconfig, mode 420 as `appendFileToIgnition` writes every appended file).
 */
import { UsageError } from '../core/errors.js';
import { isHostQualified } from '../oci/reference.js';
import { CONSOLE_DROPIN, type Fragment, type KernelArg } from './fragment.js';

export const MCD_ENCAPSULATED_PATH = '/etc/ignition-machine-config-encapsulated.json';
export const MCD_PULL_SECRET_PATH = '/var/lib/kubelet/config.json';
/**
 * Which ostree-ext the node's rpm-ostree links, for the fixture's importer (images/fixture/guest/container-import.sh
 * reads it; other images ignore it): RHCOS 4.13's predates the zstd reader (ostree-ext 0.13.4), so "0.11", whose
 * reader takes gzip and plain tar layers only. Without it a zstd image would pass on an mcd node here and fail on one.
 */
export const OSTREE_EXT_MODEL_PATH = '/etc/devpivot/ostree-ext';
/**
 * The kubeconfig the MCS appends (`defaultMachineKubeConfPath`). The firstboot MCD needs it to exist: `update()` runs
 * `updateKubeConfigPermission` (pkg/daemon/update.go:1669-1681, a57ca291), which fails the attempt with "Cannot stat
 * /etc/kubernetes/kubeconfig" when it is absent, before any OS change. devpivot has no cluster: a kubeconfig that
 * names none.
 */
export const MCD_KUBECONFIG_PATH = '/etc/kubernetes/kubeconfig';
export const MCD_KUBECONFIG = `apiVersion: v1
kind: Config
clusters: []
contexts: []
current-context: ""
preferences: {}
users: []
`;
/** The rendered MachineConfig's name, as the MCS would name a worker's (`rendered-worker-<hash>`). */
export const MCD_MACHINE_CONFIG_NAME = 'rendered-worker-devpivot';
/**
 * `spec.config` as appendEncapsulated writes it for a spec 3 client: `ctrlcommon.NewIgnConfig()`, an Ignition config
 * with only the version, the newest of the v3_2 types MCO 4.13 builds with (`pkg/controller/common/helpers.go`).
 */
export const MCD_EMPTY_IGNITION_VERSION = '3.2.0';

/** The encapsulated MachineConfig, with the fields of MachineConfigSpec (pkg/apis/…/v1/types.go, a57ca291). */
export function encapsulatedMachineConfig(osImageURL: string, kernelArguments: string[]): object {
  return {
    kind: 'MachineConfig',
    apiVersion: 'machineconfiguration.openshift.io/v1',
    metadata: { name: MCD_MACHINE_CONFIG_NAME, creationTimestamp: null },
    spec: {
      osImageURL,
      baseOSExtensionsContainerImage: '',
      config: { ignition: { version: MCD_EMPTY_IGNITION_VERSION } },
      kernelArguments,
      extensions: null,
      fips: false,
      kernelType: '',
    },
  };
}

export function mcdPullUnit(mcoImage: string): string {
  return `[Unit]
Description=Machine Config Daemon Pull
# Make sure it runs only on OSTree booted system
ConditionPathExists=/run/ostree-booted
# This "stamp file" is unlinked when we complete
# machine-config-daemon-firstboot.service
ConditionPathExists=/etc/ignition-machine-config-encapsulated.json
# Run after crio-wipe so the pulled MCD image is protected against a corrupted storage from a forced shutdown
Wants=crio-wipe.service NetworkManager-wait-online.service
After=crio-wipe.service NetworkManager-wait-online.service network.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c "while ! /usr/bin/podman pull --authfile=/var/lib/kubelet/config.json '${mcoImage}'; do sleep 1; done"

[Install]
RequiredBy=machine-config-daemon-firstboot.service
`;
}

export function mcdFirstbootUnit(mcoImage: string): string {
  // The two spaces before --entrypoint are upstream's.
  return `[Unit]
Description=Machine Config Daemon Firstboot
# Make sure it runs only on OSTree booted system
ConditionPathExists=/run/ostree-booted
# Removal of this file signals firstboot completion
ConditionPathExists=/etc/ignition-machine-config-encapsulated.json
After=machine-config-daemon-pull.service
Before=kubelet-dependencies.target

[Service]
Type=oneshot
RemainAfterExit=yes
# Disable existing repos (if any) so that OS extensions would use embedded RPMs only
ExecStartPre=-/usr/bin/sh -c "sed -i 's/enabled=1/enabled=0/' /etc/yum.repos.d/*.repo"
# Run this via podman because we want to use the nmstatectl binary in our container
ExecStart=/usr/bin/podman run --rm --privileged --net=host -v /:/rootfs  --entrypoint machine-config-daemon '${mcoImage}' firstboot-complete-machineconfig --maybe-persist-nics
ExecStart=/usr/bin/podman run --rm --privileged --pid=host --net=host -v /:/rootfs  --entrypoint machine-config-daemon '${mcoImage}' firstboot-complete-machineconfig

[Install]
RequiredBy=firstboot-osupdate.target
`;
}

export const FIRSTBOOT_OSUPDATE_TARGET = `[Unit]
Description=The firstboot OS update has completed
Documentation=https://github.com/openshift/machine-config-operator/
Requires=basic.target

[Install]
WantedBy=default.target
`;

export function mcdFragment(image: string, kernelArgs: KernelArg[], mcoImage: string | undefined): Fragment {
  if (mcoImage === undefined || !isHostQualified(mcoImage)) {
    throw new UsageError(
      mcoImage === undefined ? 'the mcd driver needs an MCO image' : `invalid MCO image pullspec '${mcoImage}'`,
      'give the machine-config-operator image the units run (devpivot ignition --mco-image REF), e.g. 10.0.2.2:5000/devpivot/mco@sha256:…',
      'IGNITION_MCO_IMAGE',
    );
  }
  const deleted = kernelArgs.filter((k) => k.op === 'DELETE');
  if (deleted.length > 0) {
    // At firstboot the old MachineConfig is empty: MCO only appends spec.kernelArguments (update.go, a57ca291).
    throw new UsageError(
      `the mcd driver cannot delete kernel arguments (${deleted.map((k) => k.arg).join(', ')})`,
      'a MachineConfig lists kernelArguments to add; drop the DELETE entries',
      'IGNITION_KERNEL_ARG',
    );
  }
  const machineConfig = encapsulatedMachineConfig(
    image,
    kernelArgs.map((k) => k.arg),
  );
  return {
    files: [
      { path: MCD_KUBECONFIG_PATH, contents: MCD_KUBECONFIG, mode: 0o644 },
      { path: MCD_ENCAPSULATED_PATH, contents: JSON.stringify(machineConfig), mode: 0o644 },
      // The cluster's pull secret; devpivot's registry needs none.
      { path: MCD_PULL_SECRET_PATH, contents: '{}\n', mode: 0o600 },
      { path: OSTREE_EXT_MODEL_PATH, contents: '0.11\n', mode: 0o644 },
    ],
    units: [
      {
        name: 'machine-config-daemon-pull.service',
        enabled: true,
        contents: mcdPullUnit(mcoImage),
        dropins: [CONSOLE_DROPIN],
      },
      {
        name: 'machine-config-daemon-firstboot.service',
        enabled: true,
        contents: mcdFirstbootUnit(mcoImage),
        dropins: [CONSOLE_DROPIN],
      },
      { name: 'firstboot-osupdate.target', enabled: true, contents: FIRSTBOOT_OSUPDATE_TARGET },
      // The staged deployment is written at shutdown: its log says whether that worked.
      { name: 'ostree-finalize-staged.service', dropins: [CONSOLE_DROPIN] },
    ],
    users: [],
  };
}
