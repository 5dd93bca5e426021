/**
 * The units of scenario files, where the document code, the TUI and the reporters import them. They are defined
 * next to the steps (`src/steps/units.ts`): step labels need them and steps import no scenario module.
 */
export { formatDuration, parseDuration, parseSize } from '../steps/units.js';
