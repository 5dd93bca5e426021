import { runIgnitionValidate } from '../ignition/validate.js';
import type { IgnitionCheck } from '../scenario/environment.js';

/** Ignition's own validator (`ignition-validate`), as scenario validation calls it. */
export function ignitionValidator(config: object): Promise<IgnitionCheck> {
  return runIgnitionValidate(config);
}
