#!/usr/bin/env bash
# Makes the guest's small ext4 disk with mke2fs -d (no root, no mount):
#   scripts/disk.sh OUT.ext4 KERNEL_RELEASE
# It holds hello.txt (one fixed line, which the disk job prints) and
# kernel-release (the release it was built beside).
set -euo pipefail

out=$1 release=$2
# mke2fs lives in /sbin, which a user's PATH may lack.
mke2fs=$(PATH="$PATH:/usr/sbin:/sbin" command -v mke2fs) || {
    echo "guests/linux: mke2fs not found (Debian package e2fsprogs)" >&2
    exit 1
}

tmp=$(mktemp -d "$(dirname "$out")/.disk.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/root"
echo "partita disk: made at build time" >"$tmp/root/hello.txt"
echo "$release" >"$tmp/root/kernel-release"
chmod 644 "$tmp/root"/*
chmod 755 "$tmp/root"

truncate -s 4M "$tmp/disk.ext4"
# 4 MiB; 256-byte inodes (timestamps past 2038, no mount warning); a fixed
# UUID and directory hash seed, so only the times change between builds.
"$mke2fs" -q -F -t ext4 -I 256 -L partita \
    -U 5a7a17a0-0000-4000-8000-000000000001 \
    -E hash_seed=5a7a17a0-0000-4000-8000-000000000002,root_owner=0:0 \
    -d "$tmp/root" "$tmp/disk.ext4"
mv "$tmp/disk.ext4" "$out"
