#!/bin/bash
# A required health check that holds on every version: the ostree deployment booted and /etc/os-release names it.
set -euo pipefail
test -e /run/ostree-booted
grep -q '^VERSION_ID=' /etc/os-release
echo "fixture health check: $(. /etc/os-release && echo "$PRETTY_NAME") is healthy"
