#!/usr/bin/env bash
# Headless Chromium for the report's browser test (internal/report): Debian's
# `chromium` package, installed with apt-get when it is missing. Unlike the
# other installs it is not kept under .cache/: apt puts it in /usr/bin, the
# only place a distribution build of a browser runs from.
#
#   bash scripts/chromium.sh install   install it once (a second run finds it); print the binary's path
#
# Environment: ENGAGEMENT_CHROMIUM (default /usr/bin/chromium): a browser
# already on the machine to use instead.
set -euo pipefail

bin=${ENGAGEMENT_CHROMIUM:-/usr/bin/chromium}

die() { echo "chromium.sh: $*" >&2; exit 1; }

install() {
  if [ -x "$bin" ]; then
    echo "$bin"
    return 0
  fi
  [ "$bin" = /usr/bin/chromium ] || die "ENGAGEMENT_CHROMIUM=$bin is not an executable file"
  command -v apt-get >/dev/null || die "$bin is missing and there is no apt-get to install Debian's chromium package"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "chromium.sh: installing Debian's chromium package with apt-get" >&2
  $sudo apt-get update -qq >&2 || die "apt-get update failed"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2 ||
    die "apt-get install chromium failed"
  [ -x "$bin" ] || die "apt-get installed chromium, but $bin is not there"
  echo "$bin"
}

case "${1:-}" in
  install) install ;;
  *) die "usage: $0 install" ;;
esac
