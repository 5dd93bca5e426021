/**
 * The first-boot update unit devpivot writes for the drivers whose guests have no pivot service of their own
 * (rpm-ostree, bootc), and what those guests get with it.
 */
import type { Fragment } from '../ignition/fragment.js';

/** Marks the pivot as done (on /var, shared by all deployments) so the new OS does not pivot again. */
const STAMP = '/var/lib/devpivot/pivot-started';

function pivotUnit(description: string, commands: string[]): string {
  return [
    '[Unit]',
    `Description=${description}`,
    'Wants=network-online.target',
    'After=network-online.target',
    `ConditionPathExists=!${STAMP}`,
    '',
    '[Service]',
    'Type=oneshot',
    'RemainAfterExit=yes',
    'StandardOutput=journal+console',
    'StandardError=journal+console',
    ...commands.map((command) => `ExecStart=${command}`),
    `ExecStart=/bin/sh -c 'mkdir -p ${STAMP.slice(0, STAMP.lastIndexOf('/'))} && touch ${STAMP}'`,
    'ExecStart=/usr/bin/systemctl reboot',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
}

/**
 * Fedora CoreOS's update agent must not race devpivot's rebase: what kola writes on FCOS (flatcar/mantle
 * `platform/cluster.go` `RenderUserData`, 845b7546; coreos/zincati `docs/usage/auto-updates.md`, "Disabling
 * auto-updates"). Zincati then stays up idle; a guest without Zincati ignores the file.
 */
export const ZINCATI_DISABLE = {
  path: '/etc/zincati/config.d/90-disable-auto-updates.toml',
  contents: '[updates]\nenabled = false\n',
  mode: 0o644,
};

/** Zincati off, then `name` running `commands`, a stamp and a reboot, once. */
export function updateUnitFragment(name: string, description: string, commands: string[]): Fragment {
  return {
    files: [{ ...ZINCATI_DISABLE }],
    units: [{ name, enabled: true, contents: pivotUnit(description, commands) }],
    users: [],
  };
}

/** Said of a staged deployment the update unit did not reboot into. */
export function updateUnitNoReboot(what: string): string {
  return `${what}: devpivot's update unit runs systemctl reboot after staging; see the node's console`;
}
