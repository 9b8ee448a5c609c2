#!/usr/bin/env bash
# Fetches arm64 .debs into the cache with one apt-get download (no root
# needed), skipping those already there:
#   scripts/download.sh DIR PACKAGE=VERSION...
# Each lands as DIR/PACKAGE_VERSION_arm64.deb, the epoch left out as
# dpkg-name does, whole or not at all.
set -euo pipefail

dir=$1
shift
mkdir -p "$dir"

want=() names=()
for spec in "$@"; do
    package=${spec%%=*} version=${spec#*=}
    name=${package}_${version#*:}_arm64.deb
    [ -f "$dir/$name" ] && continue
    want+=("$package:arm64=$version")
    names+=("$package $name")
done
[ "${#want[@]}" -eq 0 ] && exit 0

tmp=$(mktemp -d "$dir/.download.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# As root apt hands the download to its _apt user, who may not write here:
# it warns and downloads as root anyway. Say so up front instead.
sandbox=()
[ "$(id -u)" -eq 0 ] && sandbox=(-o APT::Sandbox::User=root)

if ! (cd "$tmp" && apt-get download -qq "${sandbox[@]}" "${want[@]}"); then
    echo "guests/linux: could not download ${want[*]}; if the archive has moved on," \
        "run apt-get update as root and make again" >&2
    exit 1
fi
for entry in "${names[@]}"; do
    package=${entry%% *} name=${entry#* }
    debs=("$tmp/${package}_"*_arm64.deb)
    if [ "${#debs[@]}" -ne 1 ] || [ ! -f "${debs[0]}" ]; then
        echo "guests/linux: apt-get download left no .deb for $package" >&2
        exit 1
    fi
    # apt may date the file as the archive does; what is built from it must
    # see it as new.
    touch "${debs[0]}"
    mv "${debs[0]}" "$dir/$name"
done
