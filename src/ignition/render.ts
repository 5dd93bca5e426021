/** Render a spec-neutral fragment as an Ignition spec 3.x or 2.2 config object. */
import type { Fragment } from './fragment.js';
import { majorOf, type SpecVersion } from './spec.js';

export type IgnitionConfig = { ignition: { version: string; [key: string]: unknown }; [key: string]: unknown };

/**
 * RFC 2397 data URL, percent-encoding only what RFC 2396 `uric` does not allow (so paths, `=` and `:` stay
 * readable in a diff). Ignition rejects raw spaces and quotes in data URLs.
 */
export function dataUrl(text: string): string {
  const encoded = Array.from(Buffer.from(text, 'utf8'))
    .map((byte) => {
      const char = String.fromCharCode(byte);
      return /[A-Za-z0-9\-_.!~*'();/?:@&=+$,]/.test(char)
        ? char
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    })
    .join('');
  return `data:,${encoded}`;
}

export function decodeDataUrl(url: string): string | null {
  const match = /^data:([^,]*),(.*)$/s.exec(url);
  if (!match) return null;
  return match[1]!.endsWith(';base64')
    ? Buffer.from(match[2]!, 'base64').toString('utf8')
    : decodeURIComponent(match[2]!);
}

export function render(fragment: Fragment, version: SpecVersion): IgnitionConfig {
  const spec2 = majorOf(version) === 2;
  const config: IgnitionConfig = { ignition: { version } };
  if (fragment.users.length > 0) {
    config.passwd = { users: fragment.users.map((u) => ({ name: u.name, sshAuthorizedKeys: u.sshAuthorizedKeys })) };
  }
  if (fragment.files.length > 0) {
    config.storage = {
      files: fragment.files.map((file) =>
        spec2
          ? // Spec 2 names the filesystem and always overwrites.
            { filesystem: 'root', path: file.path, mode: file.mode, contents: { source: dataUrl(file.contents) } }
          : // Spec 3 defaults to overwrite=false, which fails on files the image already has (/etc/hostname).
            { path: file.path, mode: file.mode, overwrite: true, contents: { source: dataUrl(file.contents) } },
      ),
    };
  }
  if (fragment.units.length > 0) {
    config.systemd = {
      units: fragment.units.map((unit) => ({
        name: unit.name,
        ...(unit.enabled !== undefined ? { enabled: unit.enabled } : {}),
        ...(unit.contents !== undefined ? { contents: unit.contents } : {}),
        ...(unit.dropins && unit.dropins.length > 0 ? { dropins: unit.dropins } : {}),
      })),
    };
  }
  return config;
}

export function serializeIgnition(config: object): string {
  return `${JSON.stringify(config, null, 2)}\n`;
}
