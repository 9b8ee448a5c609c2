#!/usr/bin/env bash
# Makes the guest's ext4 disk with mke2fs -d (no root, no mount):
#   scripts/disk.sh OUT.ext4 HERE KERNEL_RELEASE TOOL.deb... -- LIBRARY.deb...
# It holds hello.txt (one fixed line, which the disk job prints),
# kernel-release (the release it was built beside) and tools/, a root
# folder with the ELF programs of the TOOL packages' usr/bin (perf, gdb),
# their loader and the libraries they load, found in the LIBRARY packages
# (scripts/closure.sh), tools/env.sh that puts them on PATH, and
# tools/version, the packages they came from.
set -euo pipefail

out=$1 here=$2 release=$3
shift 3
tool_debs=()
while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
    tool_debs+=("$1")
    shift
done
[ "$#" -gt 0 ] && shift

fail() {
    echo "guests/linux: $*" >&2
    exit 1
}

# mke2fs lives in /sbin, which a user's PATH may lack.
mke2fs=$(PATH="$PATH:/usr/sbin:/sbin" command -v mke2fs) ||
    fail "mke2fs not found (Debian package e2fsprogs)"

tmp=$(mktemp -d "$(dirname "$out")/.disk.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/disk"
echo "partita disk: made at build time" >"$tmp/disk/hello.txt"
echo "$release" >"$tmp/disk/kernel-release"

root=$tmp/disk/tools
mkdir -p "$root"
. "$here/scripts/closure.sh"
add_library_packages "$@"
for deb in "${tool_debs[@]}"; do
    dir=$(unpack "$deb")
    programs=()
    for file in "$dir"/usr/bin/*; do
        [ -f "$file" ] && [ ! -L "$file" ] && "$readelf" -h "$file" >/dev/null 2>&1 &&
            programs+=("usr/bin/$(basename "$file")")
    done
    [ "${#programs[@]}" -gt 0 ] || fail "$(basename "$deb") has no program in usr/bin"
    copy_programs "$dir" "${programs[@]}"
done
cat >"$root/env.sh" <<'EOF'
# . /mnt/tools/env.sh, with this disk mounted on /mnt: perf and gdb on PATH,
# and the libraries they load where the loader looks first.
PATH=/mnt/tools/usr/bin:$PATH
LD_LIBRARY_PATH=/mnt/tools/lib/aarch64-linux-gnu:/mnt/tools/usr/lib/aarch64-linux-gnu
export PATH LD_LIBRARY_PATH
EOF
for deb in "${tool_debs[@]}" "$@"; do
    dpkg-deb -f "$deb" Package Version | paste -sd=
done | LC_ALL=C sort -u >"$root/version"

chmod -R u+w,go-w "$tmp/disk"
# Room for what is there and a fifth more, at least 4 MiB; 256-byte inodes
# (timestamps past 2038, no mount warning); a fixed UUID and directory hash
# seed, so only the times change between builds.
kib=$(du -sk "$tmp/disk" | cut -f1)
mib=$(((kib * 6 / 5 + 1023) / 1024 + 4))
truncate -s "${mib}M" "$tmp/disk.ext4"
"$mke2fs" -q -F -t ext4 -I 256 -L partita \
    -U 5a7a17a0-0000-4000-8000-000000000001 \
    -E hash_seed=5a7a17a0-0000-4000-8000-000000000002,root_owner=0:0 \
    -d "$tmp/disk" "$tmp/disk.ext4"
mv "$tmp/disk.ext4" "$out"
