// Moved to core (the scenario parser uses it, and may not import cli); re-exported for the CLI.
export * from '../core/suggest.js';
