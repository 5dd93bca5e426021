import { DevpivotError, ExitCode } from '../core/errors.js';
import type { Position } from '../steps/reader.js';

/** One problem of a scenario file, at the position of the value it is about. */
export interface ScenarioIssue extends Position {
  message: string;
  hint?: string;
}

/** A scenario file that does not follow the schema: every issue with its position. Exit status 2. */
export class ScenarioError extends DevpivotError {
  /** `file:line:col: what is wrong (what is expected)`, one per issue. */
  readonly lines: string[];

  constructor(
    readonly file: string,
    readonly issues: ScenarioIssue[],
  ) {
    const lines = issues.map(
      (issue) => `${file}:${issue.line}:${issue.col}: ${issue.message}${issue.hint ? ` (${issue.hint})` : ''}`,
    );
    super('SCENARIO_INVALID', `${issues.length} problem(s) in scenario ${file}:\n${lines.join('\n')}`, {
      hint: 'see scenarios/README.md for the schema',
      exitCode: ExitCode.usage,
    });
    this.name = 'ScenarioError';
    this.lines = lines;
  }
}

/** Thrown inside the reader to abandon one entry; collected into ScenarioError. */
export class Issue extends Error {
  constructor(readonly issue: ScenarioIssue) {
    super(issue.message);
  }
}
