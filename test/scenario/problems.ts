import { parseScenario, ScenarioError } from '../../src/scenario/parse.js';

/** The issues of an invalid scenario as `line:col: message (hint)` strings; throws when the text parses. */
export function problems(text: string): string[] {
  try {
    parseScenario(text, 'bad.yaml');
  } catch (error) {
    if (!(error instanceof ScenarioError)) throw error;
    return error.issues.map((i) => `${i.line}:${i.col}: ${i.message}${i.hint ? ` (${i.hint})` : ''}`);
  }
  throw new Error('expected a ScenarioError');
}
