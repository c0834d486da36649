#!/usr/bin/env bash
# Installs, when missing, the programs the tests drive as real peers:
# kcat, the third-party Kafka client of the daemon tests, and chromium, the
# browser the status-page and report tests drive headlessly (Debian
# packages kcat and chromium). `make test` runs this first, so a fresh machine needs nothing but
# Go, make and apt. Needs root, or sudo.
set -euo pipefail
need=()
command -v kcat >/dev/null || need+=(kcat)
[ -x /usr/bin/chromium ] || need+=(chromium)
[ ${#need[@]} -eq 0 ] && exit 0
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps: need root or sudo to install ${need[*]} with apt" >&2; exit 1; }
  sudo=sudo
fi
echo "deps: installing ${need[*]} with apt" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
