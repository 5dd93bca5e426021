/**
 * The real ScenarioEnvironment of `up` and `run`: this host's files and memory, OVMF for `firmware: uefi`, and
 * Ignition's own validator for fragments. Nothing here starts a service or talks to libvirt.
 */
import { runIgnitionValidate } from '../ignition/validate.js';
import { localEnvironment, type ScenarioEnvironment } from '../scenario/environment.js';
import { OVMF } from '../vm/domain-xml.js';

export function scenarioEnvironment(): ScenarioEnvironment {
  return localEnvironment({
    firmwareFiles: { uefi: [OVMF.code, OVMF.varsTemplate] },
    validateIgnition: (config) => runIgnitionValidate(config),
  });
}
