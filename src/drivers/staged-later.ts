/**
 * Staged now, applied later (the `upgrade: { download-only: true }` and `finalize` steps, docs/PROTOCOLS.md "Staged
 * now, applied later"): the tool stages the new deployment finalization-locked, so a shutdown does not apply it and a
 * reboot in between boots the old deployment (the locked one lived in /run and is gone); the apply unlocks what is
 * staged and reboots into it. The fixture's ostree 2022.7 has the lock as the file
 * /run/ostree/staged-deployment-locked (`ostree admin deploy --stage --lock-finalization`, ostreedev/ostree v2022.7
 * src/ostree/ot-admin-builtin-deploy.c:229-240; ostree-finalize-staged skips finalizing while it exists,
 * src/libostree/ostree-sysroot-deploy.c:3401-3409).
 */
import type { DriverStagedLater } from './definition.js';

/**
 * `bootc upgrade --download-only`, then `bootc upgrade --from-downloaded --apply` (bootc-dev/bootc 534c76ea
 * crates/lib/src/cli.rs:112-126 the flags, :1240-1259 --from-downloaded: "Staged deployment will now be applied on
 * reboot", then the reboot).
 */
export const BOOTC_STAGED_LATER: DriverStagedLater = {
  stage: () => ['bootc upgrade --download-only'],
  apply: () => ['bootc upgrade --from-downloaded --apply'],
};

/**
 * `rpm-ostree upgrade --lock-finalization`, then `rpm-ostree finalize-deployment DIGEST` (coreos/rpm-ostree d5ef5f0c
 * src/app/rpmostree-builtin-upgrade.cxx:74, src/app/rpmostree-builtin-finalize-deployment.cxx; the daemon's
 * finalize_deployment_transaction_execute, src/daemon/rpmostreed-transaction-types.cxx:2562-2628, compares DIGEST —
 * a container deployment's image digest — with the staged one, unlocks it and reboots), as the machine-config
 * daemon's on-cluster updates apply a staged deployment.
 */
export const RPM_OSTREE_STAGED_LATER: DriverStagedLater = {
  stage: () => ['rpm-ostree upgrade --lock-finalization'],
  apply: (digest, quote) => [`rpm-ostree finalize-deployment ${quote(digest)}`],
};
