/**
 * greenboot's console lines (fedora-iot/greenboot 6ccf8e9f usr/libexec/greenboot/*, through devpivot's console
 * drop-ins on its units; journald strips their `<N>` priority prefixes and adds `NAME[PID]: `):
 * - `Running Required Health Check Scripts...` / `Running Wanted Health Check Scripts...` open a section; a
 *   `Script 'NAME' FAILURE (exit code 'N'). Continuing...` in the required one is the failed check (in wanted.d the
 *   same words are only logged: greenboot goes on);
 * - `Boot Status is GREEN - Health Check SUCCESS` / `Boot Status is RED - Health Check FAILURE!` end the checks;
 * - systemd's `Failed to start greenboot-healthcheck.service` (however it names the unit) is the same red boot, not
 *   a failure of the node;
 * - `FALLBACK BOOT DETECTED! Default rpm-ostree|bootc deployment has been rolled back.`: GRUB's counter ran out and
 *   the fallback service rolled back. The rollback's own lines come through that service's stream first
 *   (`greenboot-rpm-ostree-grub2-check-fallback[PID]: Moving '…' to be first deployment`, `Changes queued for next
 *   boot…`): greenboot's, not a pivot staging (no staged-reboot watch); its `error: ` lines stay failures.
 */

export type GreenbootSection = 'required' | 'wanted';

export type GreenbootFact =
  | { kind: 'section'; section: GreenbootSection }
  | { kind: 'health'; ok: boolean; check?: string }
  | { kind: 'fallback'; tool: 'rpm-ostree' | 'bootc' }
  | { kind: 'quiet' };

const SECTION = /(?:^|: )Running (Required|Wanted) Health Check Scripts\.\.\.$/;
const SCRIPT_FAILURE = /(?:^|: )Script '([^']+)' FAILURE \(exit code '(-?\d+)'\)\. Continuing\.\.\.$/;
const GREEN = /(?:^|: )Boot Status is GREEN - Health Check SUCCESS$/;
const RED = /(?:^|: )Boot Status is RED - Health Check FAILURE!$/;
// systemd 252 prints `Failed to start <unit> - <Description>.`, the unit name ellipsized to fit the status column
// (`greenboot-… - greenboot Health Checks Runner.`); older ones the description alone.
const UNIT_FAILED =
  /^Failed to start (?:greenboot-healthcheck\.service\b|(?:greenboot-\S*… - )?greenboot Health Checks Runner\b)/;
const FALLBACK_SERVICE = /^greenboot-rpm-ostree-grub2-check-fallback\[\d+\]: (?!error: )/;
const FALLBACK = /(?:^|: )FALLBACK BOOT DETECTED! Default (rpm-ostree|bootc) deployment has been rolled back\.$/;

/** The fact a console line (noise stripped) states, given the section greenboot is in; undefined: none. */
export function greenbootFact(line: string, section: GreenbootSection | undefined): GreenbootFact | undefined {
  const opened = SECTION.exec(line);
  if (opened) return { kind: 'section', section: opened[1] === 'Required' ? 'required' : 'wanted' };
  const failed = SCRIPT_FAILURE.exec(line);
  if (failed) return section === 'wanted' ? undefined : { kind: 'health', ok: false, check: failed[1]! };
  if (GREEN.test(line)) return { kind: 'health', ok: true };
  if (RED.test(line) || UNIT_FAILED.test(line)) return { kind: 'health', ok: false };
  const fallback = FALLBACK.exec(line);
  if (fallback) return { kind: 'fallback', tool: fallback[1] as 'rpm-ostree' | 'bootc' };
  if (FALLBACK_SERVICE.test(line)) return { kind: 'quiet' };
  return undefined;
}
