/**
 * `devpivot up --tls` / `--auth`: the same scenario with its embedded registry made secure (`registry: { tls: true }`,
 * `auth: true`). Made on the scenario's text, like `--os-image` (os-image.ts): a file without `registry:` gets one
 * line appended, `registry: embedded` is replaced in place, a mapping gets the keys; every other position stays.
 * An external registry (`url`) brings its own TLS and credentials: a usage error.
 */
import { isMap, isScalar, parseDocument } from 'yaml';
import { UsageError } from '../core/errors.js';

export function overrideRegistryTrust(text: string, file: string, trust: { tls?: boolean; auth?: boolean }): string {
  const keys = Object.entries(trust).flatMap(([key, on]) => (on ? [key] : []));
  if (keys.length === 0) return text;
  const doc = parseDocument(text);
  // A file with errors is left as it is: validating it reports them at their positions.
  if (doc.errors.length > 0 || (doc.contents !== null && !isMap(doc.contents))) return text;
  const flow = `{ ${keys.map((key) => `${key}: true`).join(', ')} }`;
  const registry = isMap(doc.contents) ? doc.contents.get('registry', true) : undefined;
  if (registry === undefined) return `${text.endsWith('\n') || text === '' ? text : `${text}\n`}registry: ${flow}\n`;
  if (isScalar(registry) && (registry.value as unknown) === 'embedded' && registry.range)
    return `${text.slice(0, registry.range[0])}${flow}${text.slice(registry.range[1])}`;
  if (isMap(registry) && !registry.has('url')) {
    for (const key of keys) registry.set(key, true);
    return doc.toString();
  }
  throw new UsageError(
    `--${keys.join(' and --')} make devpivot's embedded registry secure; ${file} uses an external registry`,
    'an external registry brings its own TLS and credentials: run a scenario with the embedded registry',
  );
}
