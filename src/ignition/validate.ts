/**
 * Validation: spec 3 configs go through the real `ignition-validate` (Ignition 2.14 on Debian); spec 2.2,
 * which current Ignition no longer reads, is checked here against the 2.2 rules devpivot relies on.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DevpivotError } from '../core/errors.js';
import { run } from '../core/exec.js';
import { decodeDataUrl } from './render.js';
import { majorOf } from './spec.js';

export const IGNITION_VALIDATE = process.env.DEVPIVOT_IGNITION_VALIDATE ?? 'ignition-validate';

export interface ValidationResult {
  ok: boolean;
  /** Errors and warnings, one per line, as the validator printed them. */
  output: string;
  /** False when the validator was not installed (spec 3 only). */
  checked: boolean;
}

/** Run ignition-validate on a config (object or raw text). */
export async function runIgnitionValidate(config: object | string): Promise<ValidationResult> {
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-ign-'));
  try {
    const file = join(dir, 'config.ign');
    await writeFile(file, typeof config === 'string' ? config : JSON.stringify(config));
    const result = await run(IGNITION_VALIDATE, [file], { timeoutMs: 60_000 });
    if (result.spawnError?.code === 'ENOENT') return { ok: true, output: '', checked: false };
    const output = result.timedOut ? `${IGNITION_VALIDATE} did not finish within 60 s` : result.all.trim();
    return { ok: result.code === 0, output, checked: true };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const UNIT_SUFFIXES = [
  '.service',
  '.socket',
  '.device',
  '.mount',
  '.automount',
  '.swap',
  '.target',
  '.path',
  '.timer',
  '.snapshot',
  '.slice',
  '.scope',
];
const URL_SCHEMES = ['data:', 'http://', 'https://', 'tftp://', 's3://', 'oem://'];

/** Check a spec 2.2.0 config against the rules of that spec devpivot depends on; returns the problems. */
export function validateSpec2(config: unknown): string[] {
  const errors: string[] = [];
  const fail = (message: string): void => {
    errors.push(message);
  };
  const obj = (value: unknown): value is Record<string, unknown> =>
    typeof value === 'object' && value !== null && !Array.isArray(value);
  const list = (value: unknown, path: string): unknown[] => {
    if (value === undefined) return [];
    if (!Array.isArray(value)) {
      errors.push(`${path}: must be a list`);
      return [];
    }
    return value;
  };
  const onlyKeys = (value: Record<string, unknown>, allowed: string[], path: string) => {
    for (const key of Object.keys(value)) if (!allowed.includes(key)) errors.push(`${path}.${key}: not in spec 2.2.0`);
  };
  const source = (value: unknown, path: string) => {
    if (typeof value !== 'string') {
      fail(`${path}: must be a string`);
      return;
    }
    if (value !== '' && !URL_SCHEMES.some((scheme) => value.startsWith(scheme))) {
      errors.push(`${path}: unsupported URL scheme in '${value.slice(0, 40)}'`);
    }
    if (value.startsWith('data:') && decodeDataUrl(value) === null) errors.push(`${path}: invalid data URL`);
  };
  const unitText = (text: unknown, path: string) => {
    if (typeof text !== 'string') {
      fail(`${path}: must be a string`);
      return;
    }
    let section = false;
    text.split('\n').forEach((line, i) => {
      const trimmed = line.trim();
      if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) return;
      if (/^\[[^\]]+\]$/.test(trimmed)) section = true;
      else if (!section) errors.push(`${path}: line ${i + 1} is outside a [section]`);
      else if (!/^[A-Za-z0-9-]+\s*=/.test(trimmed)) errors.push(`${path}: line ${i + 1} is not KEY=VALUE`);
    });
  };

  if (!obj(config)) return ['config: must be a JSON object'];
  onlyKeys(config, ['ignition', 'storage', 'systemd', 'networkd', 'passwd'], 'config');
  const ignition = config.ignition;
  if (!obj(ignition) || ignition.version !== '2.2.0') errors.push('ignition.version: must be "2.2.0"');
  if (obj(ignition) && obj(ignition.config)) {
    list(ignition.config.append, 'ignition.config.append').forEach((entry, i) => {
      source(obj(entry) ? entry.source : undefined, `ignition.config.append[${i}].source`);
    });
  }
  if (config.storage !== undefined) {
    if (!obj(config.storage)) errors.push('storage: must be an object');
    else {
      onlyKeys(config.storage, ['disks', 'raid', 'filesystems', 'files', 'directories', 'links'], 'storage');
      list(config.storage.files, 'storage.files').forEach((file, i) => {
        const path = `storage.files[${i}]`;
        if (!obj(file)) {
          fail(`${path}: must be an object`);
          return;
        }
        onlyKeys(file, ['filesystem', 'path', 'contents', 'mode', 'user', 'group', 'append', 'overwrite'], path);
        if (typeof file.filesystem !== 'string' || file.filesystem === '') errors.push(`${path}.filesystem: required`);
        if (typeof file.path !== 'string' || !file.path.startsWith('/')) errors.push(`${path}.path: must be absolute`);
        if (
          file.mode !== undefined &&
          !(Number.isInteger(file.mode) && (file.mode as number) >= 0 && (file.mode as number) <= 0o7777)
        ) {
          errors.push(`${path}.mode: must be an integer permission (decimal JSON, e.g. 420 for 0644)`);
        }
        if (file.append !== undefined && typeof file.append !== 'boolean')
          errors.push(`${path}.append: must be a boolean`);
        if (file.contents !== undefined) {
          if (!obj(file.contents)) errors.push(`${path}.contents: must be an object`);
          else source(file.contents.source, `${path}.contents.source`);
        }
      });
    }
  }
  if (config.systemd !== undefined) {
    if (!obj(config.systemd)) errors.push('systemd: must be an object');
    else {
      onlyKeys(config.systemd, ['units'], 'systemd');
      list(config.systemd.units, 'systemd.units').forEach((unit, i) => {
        const path = `systemd.units[${i}]`;
        if (!obj(unit)) {
          fail(`${path}: must be an object`);
          return;
        }
        onlyKeys(unit, ['name', 'enable', 'enabled', 'mask', 'contents', 'dropins'], path);
        if (typeof unit.name !== 'string' || !UNIT_SUFFIXES.some((s) => (unit.name as string).endsWith(s))) {
          errors.push(`${path}.name: must be a unit name with a valid type suffix`);
        }
        for (const flag of ['enable', 'enabled', 'mask']) {
          if (unit[flag] !== undefined && typeof unit[flag] !== 'boolean')
            errors.push(`${path}.${flag}: must be a boolean`);
        }
        if (unit.contents !== undefined) unitText(unit.contents, `${path}.contents`);
        list(unit.dropins, `${path}.dropins`).forEach((dropin, j) => {
          const dpath = `${path}.dropins[${j}]`;
          if (!obj(dropin)) {
            fail(`${dpath}: must be an object`);
            return;
          }
          if (typeof dropin.name !== 'string' || !dropin.name.endsWith('.conf'))
            errors.push(`${dpath}.name: must end in .conf`);
          if (dropin.contents !== undefined) unitText(dropin.contents, `${dpath}.contents`);
        });
      });
    }
  }
  if (config.passwd !== undefined) {
    if (!obj(config.passwd)) errors.push('passwd: must be an object');
    else {
      list(config.passwd.users, 'passwd.users').forEach((user, i) => {
        const path = `passwd.users[${i}]`;
        if (!obj(user) || typeof user.name !== 'string' || user.name === '') {
          fail(`${path}.name: required`);
          return;
        }
        list(user.sshAuthorizedKeys, `${path}.sshAuthorizedKeys`).forEach((key, j) => {
          if (typeof key !== 'string' || key.trim() === '')
            errors.push(`${path}.sshAuthorizedKeys[${j}]: must be a key`);
        });
      });
    }
  }
  return errors;
}

/**
 * Throw IGNITION_INVALID (quoting the validator) when `config` is not valid. `what` names it in the message,
 * e.g. the user's file. A missing ignition-validate skips the spec 3 check (doctor reports it).
 */
export async function assertValidIgnition(config: object | string, what: string): Promise<ValidationResult> {
  let parsed: unknown = config;
  if (typeof config === 'string') {
    try {
      parsed = JSON.parse(config);
    } catch (error) {
      throw new DevpivotError('IGNITION_INVALID', `${what} is not valid JSON: ${(error as Error).message}`, {
        hint: 'fix the JSON syntax (jq . FILE shows where)',
        exitCode: 2,
      });
    }
  }
  const version = (parsed as { ignition?: { version?: unknown } })?.ignition?.version;
  if (typeof version !== 'string') {
    throw new DevpivotError('IGNITION_INVALID', `${what} has no ignition.version`, {
      hint: 'an Ignition config starts with {"ignition": {"version": "3.3.0"}}',
      exitCode: 2,
    });
  }
  if (majorOf(version) === 2) {
    const errors = validateSpec2(parsed);
    if (errors.length > 0) {
      throw new DevpivotError(
        'IGNITION_INVALID',
        `${what} is not a valid Ignition 2.2.0 config:\n  ${errors.join('\n  ')}`,
        {
          hint: 'fix the fields listed above (spec 2.2.0)',
          exitCode: 2,
        },
      );
    }
    return { ok: true, output: '', checked: true };
  }
  const result = await runIgnitionValidate(config);
  if (!result.ok) {
    throw new DevpivotError(
      'IGNITION_INVALID',
      `${what} is not a valid Ignition config; ignition-validate says:\n${result.output}`,
      { exitCode: 2 },
    );
  }
  return result;
}
