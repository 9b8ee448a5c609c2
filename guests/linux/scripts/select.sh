#!/usr/bin/env bash
# Picks the Debian arm64 packages the Linux guest is made of and prints them
# as make variables (the Makefile keeps them in debs/selection.mk):
#   scripts/select.sh > selection.mk
# The kernel is the one the linux-image-arm64 metapackage depends on; the
# others are apt's candidates. Only apt's lists are read: nothing is fetched.
set -euo pipefail

# dropbear-bin is the ssh server; libcrypt1, libtomcrypt1, libtommath1,
# libgmp10 and zlib1g hold the libraries it loads besides libc's.
packages=(linux-image-arm64 busybox-static rt-tests libc6 libnuma1 dropbear-bin libcrypt1 libtomcrypt1
    libtommath1 libgmp10 zlib1g)
# The disk's tools, perf and gdb, and the packages of every library they
# load, directly or not (scripts/disk.sh fails naming any soname missing).
# Only the libraries are taken from these, not their Depends: following
# those would bring perl, python and curl whole (137 packages).
tools=(linux-perf gdb-minimal)
tool_libraries=(libc6 libnuma1 libbabeltrace1 libbrotli1 libbz2-1.0 libcap2
    libcom-err2 libcrypt1 libcurl3-gnutls libdebuginfod1 libdw1 libelf1
    libexpat1 libffi8 libgcc-s1 libglib2.0-0 libgmp10 libgnutls30
    libgssapi-krb5-2 libhogweed6 libidn2-0 libk5crypto3 libkeyutils1 libkrb5-3
    libkrb5support0 libldap-2.5-0 liblzma5 libnettle8 libnghttp2-14
    libopencsd1 libp11-kit0 libpcre2-8-0 libperl5.36 libpsl5 libpython3.11
    libreadline8 librtmp1 libsasl2-2 libslang2 libssh2-1 libssl3 libstdc++6
    libtasn1-6 libtinfo6 libunistring2 libunwind8 libuuid1 libxxhash0
    libzstd1 zlib1g)
mapfile -t everything < <(printf '%s\n' "${packages[@]}" "${tools[@]}" "${tool_libraries[@]}" | awk '!seen[$0]++')

fail() {
    echo "guests/linux: $*" >&2
    exit 1
}

if ! grep -qx arm64 <<<"$(dpkg --print-foreign-architectures 2>/dev/null)" &&
    [ "$(dpkg --print-architecture 2>/dev/null)" != arm64 ]; then
    fail "dpkg does not know the arm64 architecture: run ./partita once (it adds it), or as root: dpkg --add-architecture arm64 && apt-get update"
fi

records=$(apt-cache show --no-all-versions "${everything[@]/%/:arm64}" 2>&1) ||
    fail "apt-cache does not know all of the arm64 packages ${everything[*]} (run apt-get update as root?):"$'\n'"$records"

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

# PACKAGES: package=version, as apt-get takes them, for the kernel and the
# initramfs; TOOLS and TOOL_LIBRARIES likewise for the disk; DEB_<package>:
# the file in the cache (scripts/download.sh names it so: no epoch, like
# dpkg-name).
spec() { # PACKAGE -> PACKAGE=VERSION
    local v
    v=$(field "$1" 2)
    [ -n "$v" ] || fail "apt-cache has no arm64 candidate for $1"
    echo "$1=$v"
}
echo "# Made by guests/linux/scripts/select.sh from apt's arm64 lists; do not edit."
echo "KERNEL_RELEASE := $release"
echo "KERNEL_PACKAGE := $kernel"
specs=("$kernel=$kernel_version")
for p in "${packages[@]:1}"; do specs+=("$(spec "$p")"); done
echo "PACKAGES := ${specs[*]}"
tool_specs=() library_specs=()
for p in "${tools[@]}"; do tool_specs+=("$(spec "$p")"); done
for p in "${tool_libraries[@]}"; do library_specs+=("$(spec "$p")"); done
echo "TOOLS := ${tool_specs[*]}"
echo "TOOL_LIBRARIES := ${library_specs[*]}"
printf '%s\n' "${specs[@]}" "${tool_specs[@]}" "${library_specs[@]}" | awk '!seen[$0]++' |
    while IFS= read -r s; do
        p=${s%%=*} v=${s#*=}
        echo "DEB_$p := ${p}_${v#*:}_arm64.deb"
    done
