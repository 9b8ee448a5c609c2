#!/usr/bin/env bash
# Picks the Debian arm64 packages the Linux guest is made of and prints them
# as make variables (the Makefile keeps them in debs/selection.mk):
#   scripts/select.sh > selection.mk
# The kernel is the one the linux-image-arm64 metapackage depends on; the
# others are apt's candidates. Only apt's lists are read: nothing is fetched.
set -euo pipefail

packages=(linux-image-arm64 busybox-static rt-tests libc6 libnuma1)

fail() {
    echo "guests/linux: $*" >&2
    exit 1
}

if ! grep -qx arm64 <<<"$(dpkg --print-foreign-architectures 2>/dev/null)" &&
    [ "$(dpkg --print-architecture 2>/dev/null)" != arm64 ]; then
    fail "dpkg does not know the arm64 architecture: run ./partita once (it adds it), or as root: dpkg --add-architecture arm64 && apt-get update"
fi

records=$(apt-cache show --no-all-versions "${packages[@]/%/:arm64}" 2>&1) ||
    fail "apt-cache knows no arm64 packages named ${packages[*]} (run apt-get update as root?):"$'\n'"$records"

# One "Package Version Depends" line per record.
table=$(awk '
    /^Package: / { p = $2 }
    /^Version: / { v = $2 }
    /^Depends: / { d = substr($0, 10) }
    /^$/ { if (p != "") print p "\t" v "\t" d; p = v = d = "" }
    END { if (p != "") print p "\t" v "\t" d }
' <<<"$records")

field() { # field PACKAGE COLUMN
    awk -F'\t' -v p="$1" -v c="$2" '$1 == p { print $c; exit }' <<<"$table"
}

# linux-image-arm64 depends on exactly one versioned kernel package:
# "linux-image-6.1.0-NN-arm64 (= 6.1.X-Y)".
depends=$(field linux-image-arm64 3)
if [[ $depends =~ ^(linux-image-([0-9][^ ,]*-arm64))\ \(=\ ([^\)]+)\) ]]; then
    kernel=${BASH_REMATCH[1]} release=${BASH_REMATCH[2]} kernel_version=${BASH_REMATCH[3]}
else
    fail "cannot read the kernel package from linux-image-arm64's Depends: '$depends'"
fi

# PACKAGES: package=version, as apt-get takes them; DEB_<package>: the file
# in the cache (scripts/download.sh names it so: no epoch, like dpkg-name).
echo "# Made by guests/linux/scripts/select.sh from apt's arm64 lists; do not edit."
echo "KERNEL_RELEASE := $release"
echo "KERNEL_PACKAGE := $kernel"
specs=("$kernel=$kernel_version")
for p in "${packages[@]:1}"; do
    v=$(field "$p" 2)
    [ -n "$v" ] || fail "apt-cache has no arm64 candidate for $p"
    specs+=("$p=$v")
done
echo "PACKAGES := ${specs[*]}"
for spec in "${specs[@]}"; do
    p=${spec%%=*} v=${spec#*=}
    echo "DEB_$p := ${p}_${v#*:}_arm64.deb"
done
