/**
 * The two rollback tools the drivers run (the `rollback` step, docs/PROTOCOLS.md "Rollback"). Both reorder the
 * existing deployments (no pull) and reboot only when asked.
 */
import type { DriverRollback } from './definition.js';

/**
 * `rpm-ostree rollback --reboot` (coreos/rpm-ostree d5ef5f0c src/app/rpmostree-builtin-rollback.cxx; the daemon's
 * rollback_transaction_execute, src/daemon/rpmostreed-transaction-types.cxx:455-507, prints "Moving '<csum>.<serial>'
 * to be first deployment", writes the order, then reboots), as RHCOS nodes are rolled back.
 */
export const RPM_OSTREE_ROLLBACK: DriverRollback = {
  request: () => ['rpm-ostree rollback --reboot'],
  written: /^Moving '[0-9a-f]{64}\.\d+' to be first deployment$/m,
};

/**
 * `bootc rollback --apply` (bootc-dev/bootc 534c76ea crates/lib/src/deploy.rs:1166-1237 rollback: "Next boot:
 * rollback deployment", or "Next boot: current deployment" when it reverts a queued rollback; cli.rs:1818-1823:
 * --apply reboots).
 */
export const BOOTC_ROLLBACK: DriverRollback = {
  request: () => ['bootc rollback --apply'],
  written: /^Next boot: (?:rollback|current) deployment$/m,
};
