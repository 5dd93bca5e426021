/** Public API of the Ignition module (used by the engine and `devpivot ignition`). */

export { type KernelArg, parseKernelArg, type RegistryTrust } from './fragments.js';
export { chooseSpec, generateIgnition, type IgnitionOptions, serializeIgnition } from './generate.js';
export { appendSpec2, mergeSpec3 } from './merge.js';
export { dataUrl, decodeDataUrl, type IgnitionConfig } from './render.js';
export { DEFAULT_SPEC, parseSpecVersion, SPEC_VERSIONS, type SpecVersion } from './spec.js';
export { assertValidIgnition, runIgnitionValidate, type ValidationResult, validateSpec2 } from './validate.js';
