/**
 * Every error code devpivot reports, in one place (the idea of astro's core/errors/errors-data.ts): its title,
 * and the hint to print when the place that raises it has nothing more specific to say. `DevpivotError` only
 * accepts these codes, so a new code is added here first. Codes are stable: scripts and tests match on them.
 *
 * A code without a default hint is raised with a hint that depends on the case, or where the message says it
 * all. See docs/ARCHITECTURE.md "## Errors".
 */
export interface ErrorInfo {
  /** What went wrong, in general; the message says it for the case at hand. */
  title: string;
  /** What to do, unless the call site passes a hint of its own. */
  hint?: string;
  /**
   * The exit status when the raiser does not say: 2 for what is wrong with this machine's set-up (a daemon that
   * does not answer, a tool or a permission missing), which no scenario can fix. Default 1.
   */
  exitCode?: 2;
}

const CATALOG = {
  // Command line, scenarios and runs
  USAGE: { title: 'Bad command line or input', exitCode: 2 },
  ABORTED: { title: 'Stopped on request (Ctrl-C, SIGTERM, or q in the view)' },
  TOOL_MISSING: {
    title: 'A program devpivot runs is not installed',
    hint: 'install it (devpivot doctor lists what is needed)',
    exitCode: 2,
  },
  DEADLINE: {
    title: 'A phase did not finish in time',
    hint: 'look at the console of the node (devpivot console NODE) or raise the deadline in the scenario',
  },
  FILE_UNREADABLE: { title: 'An input file cannot be read', hint: 'check the path' },
  SCENARIO_INVALID: {
    title: 'The scenario file does not follow the schema',
    hint: 'see scenarios/README.md for the schema',
    exitCode: 2,
  },
  SCENARIO_NOT_FOUND: {
    title: 'The scenario file does not exist',
    hint: 'pass a path to a .yaml scenario, e.g. scenarios/old-to-new.yaml',
    exitCode: 2,
  },
  SCENARIO_TIMEOUT: { title: "The scenario's overall timeout ran out" },
  SHARD_INVALID: {
    title: 'The --shard value is not INDEX/COUNT with 1 ≤ INDEX ≤ COUNT',
    hint: 'write --shard INDEX/COUNT, e.g. --shard 1/2 and --shard 2/2',
    exitCode: 2,
  },
  SHARD_TIMINGS_INVALID: {
    title: 'The --shard-timings file is not a JUnit report with testsuite times',
    hint: 'pass the --junit FILE of an earlier devpivot run, or leave --shard-timings out to shard by file count',
    exitCode: 2,
  },
  TAG_EXTERNAL_REGISTRY: {
    title: 'Tags (follow:, tag steps) need the embedded registry',
    hint: 'leave out registry: (or write registry: embedded) to point tags',
  },
  FAULT_EXTERNAL_REGISTRY: {
    title: 'A registry fault was asked for while the scenario uses an external registry',
    hint: "remove 'registry:' from the scenario to use the embedded one",
  },

  // The fixture OS and disk images
  FIXTURE_MISSING: {
    title: 'The fixture OS is not built, or is stale',
    hint: 'run: devpivot images build',
    exitCode: 2,
  },
  FIXTURE_NEEDS_ROOT: {
    title: 'Building the fixture OS needs root or a user namespace',
    hint: 'run: sudo devpivot images build (or allow unprivileged user namespaces)',
    exitCode: 2,
  },
  FIXTURE_NO_KERNEL: {
    title: 'No host kernel to build the fixture OS with',
    hint: 'install one: apt-get install linux-image-amd64',
    exitCode: 2,
  },
  FIXTURE_PACKAGES: { title: 'Debian packages the fixture OS is made of are missing', exitCode: 2 },
  FIXTURE_LOCKED: { title: 'Another fixture build holds the lock' },
  FIXTURE_BUILD_FAILED: { title: 'The fixture recipe failed' },
  FIXTURE_BUILD_ABORTED: { title: 'The fixture build was interrupted; nothing was kept' },
  FIXTURE_VERSION: { title: 'The fixture has no such version', hint: 'use fixture:N with one of those versions' },
  FIXTURE_NO_DISK: { title: 'This fixture version has no disk: it is reached by pivoting' },
  IMAGE_NOT_FOUND: {
    title: 'The disk image does not exist',
    hint: 'check the path, or run `devpivot images list` for the images devpivot knows',
  },
  IMAGE_UNREADABLE: { title: 'The disk image cannot be read' },
  IMAGE_NOT_QCOW2: { title: 'The disk image is not qcow2 (version 2 or 3)' },
  IMAGE_HAS_BACKING_FILE: { title: 'The disk image has a backing file' },
  IMAGE_DOWNLOAD: {
    title: 'The disk image could not be downloaded',
    hint: 'check the URL, or download it yourself and use { path, sha256 }',
  },
  IMAGE_CHECKSUM: {
    title: "The disk image does not match the scenario's sha256",
    hint: 'the file is not the one the scenario names: fix the sha256 or the file',
  },
  IMAGE_LOCKED: { title: 'Another devpivot run is downloading this image, and has not finished in an hour' },

  // VMs and libvirt
  LIBVIRT_UNREACHABLE: {
    title: 'libvirt does not answer',
    hint: 'start the daemon (libvirtd -d, or systemctl start libvirtd) or check --connect / LIBVIRT_DEFAULT_URI',
    exitCode: 2,
  },
  LIBVIRT_PERMISSION: {
    title: 'libvirt refused for lack of permission',
    hint: 'run as root, or add your user to the "libvirt" group (then log in again), or use --connect qemu:///session',
    exitCode: 2,
  },
  LIBVIRT_ERROR: {
    title: 'A libvirt call failed',
    hint: 'see the libvirt message above; `virsh` with the same URI shows the same state',
  },
  VM_FWCFG_UNSUPPORTED: {
    title: 'The hypervisor cannot pass Ignition through fw_cfg',
    hint: 'use libvirt >= 6.5 with QEMU >= 2.4 on x86_64, or a platform that reads Ignition another way',
    exitCode: 2,
  },
  VM_HOST_CLOSED: { title: 'The libvirt connection of this run is closed' },
  VM_BAD_NODE_NAME: {
    title: 'Invalid node name',
    hint: 'use lower-case letters, digits and single dashes, e.g. "node1"',
  },
  VM_NODE_EXISTS: { title: 'A node of that name already exists in this session' },
  VM_NAME_TAKEN: { title: "A domain of that name exists and is not this session's" },
  VM_SESSION_TAKEN: {
    title: "The session id is another user's on this daemon",
    hint: 'choose another session id with --session ID (or leave it out for a random one)',
  },
  VM_NOT_FOUND: {
    title: 'No such node (domain)',
    hint: 'list nodes with `devpivot ps`; pick a session with --session ID',
  },
  VM_NOT_DEVPIVOT: {
    title: 'The domain was not created by devpivot',
    hint: 'devpivot only attaches to its own VMs; use `virsh console` for others',
  },
  VM_NOT_RUNNING: { title: 'The node is not running' },
  VM_POOL_PATH_UNKNOWN: { title: "The 'devpivot' storage pool has no known directory", exitCode: 2 },
  CONSOLE_BUSY: { title: 'The console of the node is in use' },
  CONSOLE_LOG_MISSING: { title: 'No console log for that node' },

  // ssh to nodes
  REMOTE_HOST_INVALID: {
    title: 'The remote host of the libvirt URI is not a host name',
    hint: 'give qemu+ssh://USER@HOST/system with a host name or address',
  },
  SSH_MISSING: {
    title: 'The OpenSSH client (ssh, ssh-keygen) is not installed',
    hint: 'install it: apt-get install openssh-client',
  },
  SSH_KEYGEN_FAILED: { title: "ssh-keygen could not make the session's key pair" },
  SSH_NO_KEY: {
    title: 'The session has no ssh key',
    hint: 'devpivot gives nodes a key when it creates them: start them with devpivot up or run --keep',
  },
  SSH_TUNNEL_FAILED: {
    title: 'The ssh reverse tunnel to the remote libvirt host could not be opened',
    hint: 'check that `ssh` with the URI’s user, host, port and keyfile logs in without a password (BatchMode)',
  },
  REMOTE_TRANSPORT_UNSUPPORTED: {
    title: 'A remote libvirt host that devpivot cannot reach its guests on',
    hint: 'connect over ssh (qemu+ssh://USER@HOST/system): devpivot tunnels the registry and the guest network through that login',
    exitCode: 2,
  },
  SSH_NO_FORWARD: {
    title: 'The node has no ssh port forward',
    hint: 'nodes created by this version of devpivot have one (see devpivot ps); create the node again',
  },

  // Ignition
  IGNITION_INVALID: {
    title: 'The Ignition config is not valid',
    hint: 'fix the config (see the Ignition spec for its version), then retry',
  },
  IGNITION_SPEC: { title: 'Unsupported Ignition spec version' },
  IGNITION_SPEC_MISMATCH: { title: "The extra config's spec is newer than the one generated" },
  IGNITION_KERNEL_ARG: { title: 'Invalid kernel argument change' },
  IGNITION_MCO_IMAGE: { title: 'The mcd driver needs a machine-config-operator image' },
  IGNITION_IMAGE_NOT_PINNED: {
    title: 'The legacy driver needs the image by digest',
    hint: 'use HOST:PORT/REPO@sha256:… (devpivot build prints it)',
  },
  IGNITION_MIRROR: {
    title: 'Invalid registry mirror',
    hint: 'mirror prefixes are host[:port]/path; mirror mode needs registries.conf.d drop-ins (Ignition spec 3)',
  },
  IGNITION_REGISTRY: {
    title: 'Invalid registry address',
    hint: 'write HOST:PORT as the guest reaches it, e.g. 10.0.2.2:5000',
  },
  IGNITION_HOSTNAME: { title: 'Invalid hostname', hint: 'use letters, digits, dots and hyphens' },
  IGNITION_CA: { title: 'The registry CA is not a PEM certificate', hint: 'pass the registry CA in PEM format' },

  // Oscontainers, ostree and the registry client
  BAD_REFERENCE: {
    title: 'Invalid image reference',
    hint: 'write HOST:PORT/REPOSITORY[:TAG][@sha256:DIGEST], e.g. 127.0.0.1:5000/os/rhcos:v2',
  },
  BUILD_NO_SOURCE: {
    title: 'Nothing to build an oscontainer from',
    hint: 'pass --ostree-repo REPO --commit COMMIT, --from-dir ROOTFS --version V, or --fixture N',
  },
  BUILD_NEEDS_VERSION: { title: 'The oscontainer needs a version', hint: 'pass --version, e.g. --version 2.0' },
  BUILD_ZSTD_FAILED: {
    title: 'zstd could not compress the layer',
    hint: 'install zstd (npm run setup does), or build with compression gzip',
  },
  NOT_AN_OSCONTAINER: { title: 'The image is not an oscontainer or bootable container image' },
  NO_MATCHING_PLATFORM: {
    title: 'The image index has no linux/amd64 image',
    hint: 'pass --all to copy every platform',
  },
  // Images on this machine (containers-storage:, oci-archive:, oci:)
  LOCAL_IMAGE_NOT_FOUND: {
    title: 'The local image (podman storage, OCI archive or layout) does not exist',
    hint: 'check the name (podman images) or the path',
    exitCode: 2,
  },
  LOCAL_IMAGE_AMBIGUOUS: {
    title: 'The OCI archive or layout holds several images and the source names none of them',
    hint: 'add :REF naming one of them',
    exitCode: 2,
  },
  LOCAL_IMAGE_COPY: { title: 'skopeo could not copy the local image' },
  DERIVED_BUILD_FAILED: { title: 'podman could not build or push the derived image' },
  OSTREE_FAILED: { title: 'An ostree command failed' },
  OSTREE_COMMIT_NOT_FOUND: { title: 'No such ostree commit or ref' },
  OSTREE_OBJECT_MISSING: { title: 'An object of the commit is not in the repository' },
  OSTREE_OBJECT_CORRUPT: { title: 'An ostree object does not match its checksum or cannot be read' },
  NATIVE_SYSROOT_NOT_EMPTY: { title: 'The commit has content under /sysroot (a bootable image keeps it empty)' },
  CHUNKING_NO_COMPONENTS: { title: 'A chunked image needs to know which package each file comes from' },
  CHUNKING_TOO_FEW_LAYERS: { title: 'Too few layers to chunk an image (ostree-ext needs at least 4)' },
  CHUNKING_FAILED: { title: 'The components cannot be packed into the layers asked for' },
  AUTH_FILE_INVALID: { title: 'The registry auth file cannot be used' },
  REGISTRY_UNREACHABLE: { title: 'The registry does not answer' },
  REGISTRY_AUTH_FAILED: { title: 'The registry refused the credentials' },
  REGISTRY_ERROR: { title: 'The registry answered with an error' },
  NOT_FOUND: { title: 'The registry does not have it' },
  DIGEST_MISMATCH: { title: 'The registry served content that does not match its digest' },
  BLOB_DOWNLOAD_FAILED: { title: 'A blob download failed', hint: 'check the network and the registry, then retry' },

  // The embedded registry: the distribution spec's error codes ("Error Codes"), plus listening
  REGISTRY_LISTEN: { title: 'The registry cannot listen on that address' },
  REGISTRY_TLS: {
    title: 'The registry TLS certificates cannot be made',
    hint: 'check that openssl works and the state directory is writable',
  },
  REGISTRY_STORE_SERVING: {
    title: 'Another process serves this registry store',
    hint: 'stop that registry (or its devpivot session) first, or use --dry-run to see what gc would remove',
  },
  BLOB_UNKNOWN: { title: 'Blob unknown to registry' },
  BLOB_UPLOAD_INVALID: { title: 'Blob upload invalid' },
  BLOB_UPLOAD_UNKNOWN: { title: 'Blob upload unknown to registry' },
  DIGEST_INVALID: {
    title: 'Provided digest did not match uploaded content',
    hint: 'the content does not hash to the digest given: check the digest and resend the content',
  },
  MANIFEST_BLOB_UNKNOWN: {
    title: 'Manifest references a manifest or blob unknown to registry',
    hint: 'push every config and layer blob (and every child manifest of an index) before the manifest',
  },
  MANIFEST_INVALID: { title: 'Manifest invalid' },
  MANIFEST_UNKNOWN: { title: 'Manifest unknown to registry' },
  NAME_INVALID: {
    title: 'Invalid repository name',
    hint: 'repository names are lowercase path components like "devpivot/os" (spec: [a-z0-9]+ with . _ __ - separators)',
  },
  NAME_UNKNOWN: { title: 'Repository name not known to registry' },
  SIZE_INVALID: { title: 'Provided length did not match content length' },
  UNAUTHORIZED: { title: 'Authentication required' },
  DENIED: { title: 'Requested access to the resource is denied' },
  UNSUPPORTED: { title: 'The operation is unsupported' },
  TOOMANYREQUESTS: { title: 'Too many requests' },
  UNAVAILABLE: {
    title: 'The registry cannot serve it now (its pull-through upstream failed)',
    hint: 'check that the upstream registry is up and its credentials (auth.json), then retry',
  },
} satisfies Record<string, ErrorInfo>;

export type ErrorCode = keyof typeof CATALOG;

export const ERROR_CODES: Readonly<Record<ErrorCode, ErrorInfo>> = CATALOG;

export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(CATALOG, value);
}
