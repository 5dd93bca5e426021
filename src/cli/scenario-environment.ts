/**
 * The real ScenarioEnvironment of `up` and `run`: this host's files and memory, OVMF for `firmware: uefi`, and
 * Ignition's own validator for fragments. Nothing here starts a service or talks to libvirt. With a remote
 * libvirt URI the VMs run elsewhere: that host's memory and firmware files are not known here, so they are not
 * checked.
 */

import { localImageProblem } from '../oscontainer/local-image.js';
import { localEnvironment, type ScenarioEnvironment } from '../scenario/environment.js';
import { OVMF, OVMF_SECURE, SWTPM_FILES } from '../vm/domain-xml.js';
import { ignitionValidator } from './ignition-validator.js';

/** `qemu:///system`, `qemu+unix:///session?socket=…`: the hypervisor is this machine. */
export function isLocalUri(uri: string): boolean {
  return /^[a-z0-9+]+:\/\/\//i.test(uri);
}

export function scenarioEnvironment(uri?: string): ScenarioEnvironment {
  const local = uri === undefined || isLocalUri(uri);
  return localEnvironment({
    firmwareFiles: local
      ? { uefi: [OVMF.code, OVMF.varsTemplate], 'uefi-secure': [OVMF_SECURE.code, OVMF_SECURE.varsTemplate] }
      : {},
    ...(local ? { tpmFiles: SWTPM_FILES } : {}),
    ...(local ? {} : { totalMemoryBytes: Number.POSITIVE_INFINITY }),
    validateIgnition: ignitionValidator,
    localImageProblem: (source) => localImageProblem(source),
  });
}
