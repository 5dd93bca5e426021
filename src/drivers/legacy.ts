/**
 * `legacy`: RHCOS 4.1–4.5, openshift/pivot run by `pivot.service` from /etc/pivot/image-pullspec, as the
 * machine-config server of that era wrote it (docs/PROTOCOLS.md "legacy").
 */
import { UsageError } from '../core/errors.js';
import { CONSOLE_DROPIN, emptyFragment, FINALIZE_STAGED_UNIT, type Fragment } from '../ignition/fragment.js';
import { isDigestPinned } from '../oci/reference.js';
import type { DriverDefinition } from './definition.js';
import { RPM_OSTREE_ROLLBACK } from './rollback.js';

/** appendInitialPivot's unit, byte for byte (MCO release-4.5 pkg/server/server.go). */
export const MCD_WRITE_PIVOT_REBOOT = {
  name: 'mcd-write-pivot-reboot.service',
  contents: `[Unit]
Before=pivot.service
ConditionFirstBoot=true
[Service]
ExecStart=/bin/sh -c 'mkdir /run/pivot && touch /run/pivot/reboot-needed'
[Install]
WantedBy=multi-user.target
`,
};

export const legacy: DriverDefinition = {
  formats: ['legacy'],
  specs: { default: '3.0.0', majors: [2, 3], guests: 'RHCOS 4.1–4.5 (spec 2.2.0) or the fixture (spec 3)' },
  // pivot reads ADD/DELETE lines from /etc/pivot/kernel-args (openshift/pivot cmd/root.go).
  kernelArgs: { add: true, delete: true },
  nodeKeys: [],
  // openshift/pivot takes no native image (its legacy layer is gzip, what its podman pull reads)
  readsZstdLayers: false,
  // pivot passes `--authfile /var/lib/kubelet/config.json` to podman when it exists (cmd/root.go, e31a72d).
  pullSecretPaths: ['/var/lib/kubelet/config.json'],
  fragment(image, kernelArgs): Fragment {
    // pivot.service pulls exactly what the pullspec names: a tag could move under it, a digest cannot.
    if (!isDigestPinned(image)) {
      throw new UsageError(
        `the legacy driver needs the image by digest, got '${image}'`,
        'use HOST:PORT/REPO@sha256:… (devpivot build prints it)',
        'IGNITION_IMAGE_NOT_PINNED',
      );
    }
    const fragment = emptyFragment();
    fragment.files.push({ path: '/etc/pivot/image-pullspec', contents: `${image}\n`, mode: 0o644 });
    if (kernelArgs.length > 0) {
      fragment.files.push({
        path: '/etc/pivot/kernel-args',
        contents: kernelArgs.map((k) => `${k.op} ${k.arg}\n`).join(''),
        mode: 0o644,
      });
    }
    fragment.units.push({ name: 'pivot.service', dropins: [CONSOLE_DROPIN] });
    // What the machine-config server of 4.1–4.5 wrote next to the pullspec (openshift/machine-config-operator
    // release-4.5 pkg/server/server.go appendInitialPivot, f84e07a9): pivot.service runs pivot without --reboot,
    // and pivot reboots only when /run/pivot/reboot-needed exists, which this unit creates on the first boot.
    fragment.units.push({
      name: MCD_WRITE_PIVOT_REBOOT.name,
      enabled: true,
      contents: MCD_WRITE_PIVOT_REBOOT.contents,
    });
    fragment.units.push(FINALIZE_STAGED_UNIT);
    return fragment;
  },
  // The machine-config daemon's RunPivot (engine/ssh-pivot.ts cites it): the pullspec without a newline, no
  // reboot-needed (the MCD reboots), then pivot.service, which fails when pivot fails.
  secondRequest: (pullspec, quote) => [
    'mkdir -p /etc/pivot',
    `printf '%s' ${quote(pullspec)} > /etc/pivot/image-pullspec`,
    'chmod 0644 /etc/pivot/image-pullspec',
    'rm -f /run/pivot/reboot-needed',
    'systemctl start pivot.service',
  ],
  // openshift/pivot (e31a72d `cmd/root.go`) reboots only with `--reboot` or when /run/pivot/reboot-needed exists,
  // and `pivot.service` passes no `--reboot`; mcd-write-pivot-reboot.service creates the file on the first boot.
  noRebootReason({ what, node, boots }) {
    const why = `${what}: pivot reboots only with --reboot or when /run/pivot/reboot-needed exists`;
    // A pivot that runs again on a later boot (the pullspec survived a power cut) stages and stays: the unit that
    // would make it reboot has ConditionFirstBoot=true. On a cluster the machine-config daemon's pod finishes it.
    if (boots > 1)
      return (
        `${why}, which mcd-write-pivot-reboot.service creates on the first boot only (ConditionFirstBoot=true), and ` +
        `this was boot ${boots} of ${node}: the node stays on its old deployment until something reboots it cleanly`
      );
    return `${why} (mcd-write-pivot-reboot.service creates it on the first boot; is it missing or masked?)`;
  },
  rollback: RPM_OSTREE_ROLLBACK,
  // openshift/pivot compares a pullspec by digest with the booted pivot:// origin (cmd/root.go); a tag is refused
  upgrade: {
    follows: 'digest',
    why: 'pivot takes a pullspec by digest (it compares it with the booted pivot:// origin)',
    request(pullspec, quote) {
      return legacy.secondRequest(pullspec, quote);
    },
    // openshift/pivot e31a72d cmd/root.go: `rpm-ostree rebase`, then the reboot; it has no way to stage for later
    later: { refused: 'openshift/pivot stages and reboots in one run; it has no download-only mode' },
  },
};
