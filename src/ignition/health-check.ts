/**
 * greenboot on a node (`health-check:`): the units fedora-iot/greenboot's spec enables (greenboot.spec
 * %systemd_post at 6ccf8e9f) enabled by Ignition's presets, their output copied to the console (so the host sees the
 * checks, the counter and the fallback), the maximum boot attempts in /etc/greenboot/greenboot.conf, and the user's
 * own required check. The images that ship greenboot (RHEL for Edge, Fedora IoT, the fixture) have the rest.
 */
import { CONSOLE_DROPIN, type Fragment, type UnitNode } from './fragment.js';

export interface HealthCheck {
  /** GREENBOOT_MAX_BOOT_ATTEMPTS: the boots of a new deployment before GRUB falls back (greenboot's default 3). */
  attempts: number;
  /** A check of the user's, written to /etc/greenboot/check/required.d/NAME (NAME ends in .sh). */
  script?: { name: string; contents: string };
}

/** The units greenboot's package enables; all but the set-success one print to the journal. */
const UNITS = [
  'greenboot-healthcheck.service',
  'greenboot-task-runner.service',
  'redboot-task-runner.service',
  'redboot-auto-reboot.service',
  'greenboot-grub2-set-counter.service',
  'greenboot-grub2-set-success.service',
  'greenboot-rpm-ostree-grub2-check-fallback.service',
] as const;

const SILENT: ReadonlySet<string> = new Set(['greenboot-grub2-set-success.service']);

/** The boot line comes before greenboot's verdict and its fallback on the console (ordering only). */
const REPORT_FIRST: UnitNode = {
  name: 'devpivot-report.service',
  dropins: [
    {
      name: '20-devpivot-before-greenboot.conf',
      contents:
        "# devpivot: the boot report precedes greenboot's checks and fallback\n[Unit]\nBefore=greenboot-rpm-ostree-grub2-check-fallback.service greenboot-healthcheck.service\n",
    },
  ],
};

export const REQUIRED_DIR = '/etc/greenboot/check/required.d';

export function healthCheckFragment(check: HealthCheck): Fragment {
  const units: UnitNode[] = UNITS.map((name) => ({
    name,
    enabled: true,
    ...(SILENT.has(name) ? {} : { dropins: [CONSOLE_DROPIN] }),
  }));
  return {
    files: [
      {
        path: '/etc/greenboot/greenboot.conf',
        contents: `# devpivot: health-check\nGREENBOOT_MAX_BOOT_ATTEMPTS=${check.attempts}\nDISABLED_HEALTHCHECKS=()\n`,
        mode: 0o644,
      },
      ...(check.script
        ? [{ path: `${REQUIRED_DIR}/${check.script.name}`, contents: check.script.contents, mode: 0o755 }]
        : []),
    ],
    units: [...units, REPORT_FIRST],
    users: [],
  };
}
