/**
 * What scenario validation may know about this machine without starting anything: the fixture's versions (from
 * its recipe, not a build), the host's memory, what is at a path, the firmware files, and Ignition's own
 * validator. The CLI passes the real one (`src/cli/scenario-environment.ts`); tests pass fakes.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { totalmem } from 'node:os';
import type { Firmware } from '../core/firmware.js';
import type { LocalSource } from '../oci/local-source.js';
import { FIXTURE_RECIPE } from './fixture-recipe.js';

export type PathKind = 'file' | 'directory' | 'other' | 'missing' | 'unreadable';

/** The result of `ignition-validate` on one config: its lines, as the validator printed them. */
export interface IgnitionCheck {
  /** False when the validator is not installed (nothing was checked; `devpivot doctor` reports it). */
  checked: boolean;
  ok: boolean;
  output: string;
}

export interface ScenarioEnvironment {
  /** The fixture OS versions the recipe builds, and those that have a bootable disk. */
  readonly fixture: { readonly versions: readonly string[]; readonly bootable: readonly string[] };
  /** Physical memory of the host, in bytes. */
  readonly totalMemoryBytes: number;
  /** What is at `path` (following symlinks). */
  pathKind(path: string): PathKind;
  /** The first `bytes` bytes of a file, or undefined when it cannot be read. */
  readHead(path: string, bytes: number): Buffer | undefined;
  /** Files a `firmware` value needs on the host (OVMF for uefi); none known: not checked. */
  readonly firmwareFiles: Readonly<Partial<Record<Firmware, readonly string[]>>>;
  /**
   * What is wrong with a local image source (the podman image is missing, the archive holds several images, …),
   * or undefined; absent: not checked before the run (the copy reports it then).
   */
  localImageProblem?(source: LocalSource): { message: string; hint: string } | undefined;
  /** Files `tpm: true` needs on the host (swtpm, which libvirt runs); none known: not checked. */
  readonly tpmFiles?: readonly string[];
  /** Ignition's validator on a spec 3 config; absent: fragments are checked for their version only. */
  validateIgnition?(config: object): Promise<IgnitionCheck>;
}

export function pathKind(path: string): PathKind {
  try {
    const info = statSync(path);
    return info.isFile() ? 'file' : info.isDirectory() ? 'directory' : 'other';
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? 'missing' : 'unreadable';
  }
}

export function readHead(path: string, bytes: number): Buffer | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const buffer = Buffer.alloc(bytes);
    const read = readSync(fd, buffer, 0, bytes, 0);
    return buffer.subarray(0, read);
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** This machine's files and memory, the fixture recipe's versions; no firmware files and no Ignition validator. */
export function localEnvironment(overrides: Partial<ScenarioEnvironment> = {}): ScenarioEnvironment {
  return {
    fixture: FIXTURE_RECIPE,
    totalMemoryBytes: totalmem(),
    pathKind,
    readHead,
    firmwareFiles: {},
    ...overrides,
  };
}
