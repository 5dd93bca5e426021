/**
 * The boot report of docs/PROTOCOLS.md ("What the console shows"), installed on every node: one line per boot,
 * `devpivot-report: {"event":"booted","bootId":…,"version":…,"commit":…,"image":…}`, from the first tool the guest
 * has of `bootc status --json` (bootc images, FCOS ≥ 41), `rpm-ostree status --json` (RHCOS, FCOS) and `ostree admin
 * status` (plain ostree: version and commit only). bootc is read only when it knows the booted image: a deployment
 * pivot made (a `pivot://` origin) has no bootc image, and rpm-ostree still names it. `image` is the booted image by
 * digest where the guest knows it: bootc's `status.booted.image`, rpm-ostree's `container-image-reference-digest`,
 * or the `pivot://` custom origin openshift/pivot and the machine-config daemon (4.1–4.11) record; "" otherwise.
 *
 * POSIX sh and awk only (RHCOS and FCOS have no jq guarantee, bootc images may lack python): a small awk reads the
 * JSON into `path<TAB>value` lines (`deployments.0.checksum`, `status.booted.image.imageDigest`).
 */
const FLATTEN_AWK = String.raw`
function fail() { exit 1 }
function ws() { while (pos <= len && index(" \t\r\n", substr(s, pos, 1)) > 0) pos++ }
function str(   out, c, e) {
  out = ""; pos++
  while (pos <= len) {
    c = substr(s, pos, 1)
    if (c == "\"") { pos++; return out }
    if (c == "\\") {
      e = substr(s, pos + 1, 1); pos += 2
      if (e == "n") out = out " "; else if (e == "t") out = out " "; else if (e == "u") { out = out "?"; pos += 4 }
      else if (e == "b" || e == "f" || e == "r") out = out ""; else out = out e
      continue
    }
    out = out c; pos++
  }
  fail()
}
function value(path,   c, n, key, start) {
  ws(); c = substr(s, pos, 1)
  if (c == "{") {
    pos++; ws()
    if (substr(s, pos, 1) == "}") { pos++; return }
    for (;;) {
      ws(); if (substr(s, pos, 1) != "\"") fail()
      key = str(); ws(); if (substr(s, pos, 1) != ":") fail(); pos++
      value(path == "" ? key : path "." key); ws()
      c = substr(s, pos, 1); pos++
      if (c == "}") return
      if (c != ",") fail()
    }
  }
  if (c == "[") {
    pos++; ws(); n = 0
    if (substr(s, pos, 1) == "]") { pos++; return }
    for (;;) {
      value(path == "" ? n : path "." n); n++; ws()
      c = substr(s, pos, 1); pos++
      if (c == "]") return
      if (c != ",") fail()
    }
  }
  if (c == "\"") { print path "\t" str(); return }
  start = pos
  while (pos <= len && index(",]} \t\r\n", substr(s, pos, 1)) == 0) pos++
  print path "\t" substr(s, start, pos - start)
}
{ s = s $0 "\n" }
END { len = length(s); pos = 1; value("") }
`;

export const REPORT_SCRIPT = `#!/bin/sh
# devpivot: print one machine-readable line per boot with the booted OS version, ostree commit and image digest.
# Sources, first found: bootc status --json, rpm-ostree status --json, ostree admin status.
flatten() {
  awk '${FLATTEN_AWK.replace(/'/g, "'\\''")}'
}
# get KEY: the value at KEY in $flat
get() { printf '%s\\n' "$flat" | awk -F '\\t' -v k="$1" '$1 == k { print $2; exit }'; }
# by_digest REF DIGEST: REF (transport prefix, tag and digest removed) @ DIGEST
by_digest() {
  name=\${1#ostree-*:}
  name=\${name#docker://}
  name=\${name%@*}
  case \${name##*/} in *:*) name=\${name%:*} ;; esac
  printf '%s@%s' "$name" "$2"
}
json() { printf '%s' "$1" | sed 's/\\\\/\\\\\\\\/g; s/"/\\\\"/g'; }

boot_id=$(cat /proc/sys/kernel/random/boot_id)
version='' commit='' image=''
if command -v bootc >/dev/null 2>&1 &&
  flat=$( (bootc status --format=json 2>/dev/null || bootc status --json 2>/dev/null) | flatten) &&
  [ -n "$(get status.booted.image.imageDigest)" ]; then
  commit=$(get status.booted.ostree.checksum)
  version=$(get status.booted.image.version)
  digest=$(get status.booted.image.imageDigest)
  [ -z "$digest" ] || image=$(by_digest "$(get status.booted.image.image.image)" "$digest")
elif command -v rpm-ostree >/dev/null 2>&1 && flat=$(rpm-ostree status --json 2>/dev/null | flatten) &&
  booted=$(printf '%s\\n' "$flat" | awk -F '\\t' '$1 ~ /^deployments\\.[0-9]+\\.booted$/ && $2 == "true" {
    split($1, p, "."); print p[2]; exit }') && [ -n "$booted" ]; then
  d=deployments.$booted
  commit=$(get "$d.checksum")
  version=$(get "$d.version")
  digest=$(get "$d.container-image-reference-digest")
  origin=$(get "$d.custom-origin.0")
  if [ -n "$digest" ]; then
    image=$(by_digest "$(get "$d.container-image-reference")" "$digest")
  else
    case $origin in pivot://*@sha256:*) image=\${origin#pivot://} ;; esac
  fi
else
  set -- $(ostree admin status 2>/dev/null | awk '
    /^\\* / { found = 1; split($3, parts, "."); commit = parts[1]; next }
    found && /^  [^ ]/ { exit }
    found && $1 == "Version:" { version = $2; exit }
    END { print commit, version }')
  commit=\${1:-} version=\${2:-}
fi
line="devpivot-report: {\\"event\\":\\"booted\\",\\"bootId\\":\\"$boot_id\\",\\"version\\":\\"$(json "$version")\\",\\"commit\\":\\"$(json "$commit")\\",\\"image\\":\\"$(json "$image")\\"}"
echo "$line"
if [ -w /dev/console ]; then echo "$line" > /dev/console; fi
`;

/** The update units the report runs before, so the boot line precedes any pivot output on the console. */
export const UPDATE_UNITS = [
  'pivot.service',
  'machine-config-daemon-pull.service',
  'machine-config-daemon-firstboot.service',
  'devpivot-rebase.service',
  'devpivot-switch.service',
];
