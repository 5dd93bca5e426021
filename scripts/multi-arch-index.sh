#!/bin/sh
# Make an OCI archive holding a multi-arch index, with real podman and skopeo: linux/amd64 is the fixture's native
# version N (default 2, zstd), linux/arm64 a tiny image (FROM scratch, one file: no emulation needed). Usage:
#   scripts/multi-arch-index.sh OUT.ociarchive [N]
# It starts a devpivot registry on a free loopback port, builds and pushes the native image there, runs `podman
# manifest create/add/push --all` against it, then `skopeo copy --all` into OUT (ref multi-arch), and stops the
# registry. Prints the index digest, then the linux/amd64 child's digest. Needs root's podman (or the user's).
set -eu
out=$1
version=${2:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/devpivot-multi-arch-XXXXXX")
list=localhost/devpivot-multi-arch/index-$$:1
arm=localhost/devpivot-multi-arch/arm64-$$:1
pid=''
cleanup() {
  [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
  podman manifest rm "$list" >/dev/null 2>&1 || true
  podman rmi --force "$arm" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
# The log exists before the loop reads it: the background shell opens it only once it runs, which may be after.
: >"$work/registry.log"
node "$root/bin/devpivot.js" registry serve --port 0 --storage "$work/registry" --quiet >"$work/registry.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  address=$(sed -n 's|^registry listening on http://\([^ ]*\).*|\1|p' "$work/registry.log")
  [ -z "$address" ] || break
  sleep 0.1
done
[ -n "$address" ] || { cat "$work/registry.log" >&2; exit 1; }
# zstd, as a scenario's own native build of the same version is: the same layer, so an image derived from that
# build shares it (scenarios/derived-image.yaml switches from this index's child to one).
amd64=$(node "$root/bin/devpivot.js" build --fixture "$version" --format native --compression zstd --oci \
  --push "$address/os/fixture:$version" \
  2>"$work/build.log") || { cat "$work/build.log" >&2; exit 1; }
mkdir "$work/arm64"
echo "linux/arm64 child of the devpivot multi-arch test index" >"$work/arm64/README"
printf 'FROM scratch\nCOPY README /usr/share/README\nLABEL containers.bootc=1 version=%s\n' "$version" >"$work/arm64/Containerfile"
podman build --quiet --platform linux/arm64 --tag "$arm" "$work/arm64" >/dev/null
podman manifest create "$list" >/dev/null
podman manifest add --tls-verify=false "$list" "docker://$amd64" >/dev/null
podman manifest add "$list" "containers-storage:$arm" >/dev/null
podman manifest push --quiet --all --tls-verify=false "$list" "docker://$address/os/multi-arch:$version"
rm -f "$out"
skopeo copy --quiet --all --src-tls-verify=false "docker://$address/os/multi-arch:$version" "oci-archive:$out:multi-arch"
tar -xOf "$out" index.json | jq -r '.manifests[0].digest'
echo "${amd64##*@}"
