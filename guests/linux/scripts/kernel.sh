#!/usr/bin/env bash
# Takes the kernel and the modules the guest needs out of Debian's kernel
# package:
#   scripts/kernel.sh KERNEL.deb RELEASE IMAGE MODULES_DIR MODULE...
# IMAGE: the raw arm64 Image ("ARM\x64" at 0x38), decompressed if the package
#   ships it compressed.
# MODULES_DIR/lib/modules/RELEASE/: each MODULE with everything it depends on
#   (modules.dep, and the "pre:" soft dependencies of modules.softdep, which
#   ext4 and jbd2 need for crc32c), uncompressed so that busybox insmod loads
#   them; load-order lists them, one path a line, dependencies first; the
#   modules.* files are depmod's for that set. MODULE names that are built
#   into the kernel are skipped.
# The package ships no modules.dep (its postinst runs depmod), so this runs
# depmod on the whole unpacked tree, which is then thrown away.
set -euo pipefail

deb=$1 release=$2 image=$3 modules_dir=$4
shift 4

fail() {
    echo "guests/linux: $*" >&2
    exit 1
}

# depmod lives in /sbin, which a user's PATH may lack.
depmod=$(PATH="$PATH:/usr/sbin:/sbin" command -v depmod) || fail "depmod not found (Debian package kmod)"

out=$(dirname "$image")
mkdir -p "$out" "$(dirname "$modules_dir")"
tmp=$(mktemp -d "$out/.kernel.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

dpkg-deb -x "$deb" "$tmp/pkg"
tree=$tmp/pkg/lib/modules/$release
[ -d "$tree" ] || fail "$deb has no lib/modules/$release"

# The Image. Debian's arm64 vmlinuz is the raw Image (an EFI stub, signed);
# other kernels ship it gzipped.
vmlinuz=$tmp/pkg/boot/vmlinuz-$release
[ -f "$vmlinuz" ] || fail "$deb has no boot/vmlinuz-$release"
if [ "$(head -c 2 "$vmlinuz" | od -An -tx1 | tr -d ' ')" = 1f8b ]; then
    gzip -dc "$vmlinuz" >"$tmp/Image"
else
    cp "$vmlinuz" "$tmp/Image"
fi
magic=$(dd if="$tmp/Image" bs=1 skip=56 count=4 2>/dev/null | od -An -tx1 | tr -d ' ')
[ "$magic" = 41524d64 ] || fail "boot/vmlinuz-$release is not an arm64 Image (magic at 0x38: $magic)"

"$depmod" -b "$tmp/pkg" "$release"

# name -> path in modules.dep ("-" and "_" are the same in module names).
declare -A path_of deps_of
while IFS= read -r line; do
    path=${line%%:*}
    base=${path##*/}
    name=${base%%.ko*}
    name=${name//-/_}
    path_of[$name]=$path
    deps_of[$path]=${line#*:}
done <"$tree/modules.dep"

# Soft "pre:" dependencies by module name, and aliases (crypto-crc32c ->
# crc32c_generic) to resolve them.
declare -A pre_of alias_of
while read -r word name rest; do
    [ "$word" = softdep ] || continue
    pre=${rest#pre:}
    [ "$pre" != "$rest" ] || continue
    pre=${pre%%post:*}
    pre_of[${name//-/_}]=$pre
done <"$tree/modules.softdep"
while read -r word alias name; do
    [ "$word" = alias ] && [ -z "${alias_of[$alias]:-}" ] && alias_of[$alias]=${name//-/_}
done <"$tree/modules.alias"

resolve() { # NAME or ALIAS -> modules.dep path, or nothing if built in
    local name=${1//-/_}
    if [ -n "${path_of[$name]:-}" ]; then
        echo "${path_of[$name]}"
    elif [ -n "${alias_of[$1]:-}" ] && [ -n "${path_of[${alias_of[$1]}]:-}" ]; then
        echo "${path_of[${alias_of[$1]}]}"
    elif grep -q "/${name}.ko" "$tree/modules.builtin" ||
        grep -q "/${name//_/-}.ko" "$tree/modules.builtin"; then
        echo "guests/linux: $1 is built into the kernel" >&2
    else
        fail "no module $1 in $release"
    fi
}

# Depth first: a module comes after its soft and hard dependencies.
declare -A seen
order=()
visit() { # modules.dep path
    local path=$1 dep name pre
    [ -n "${seen[$path]:-}" ] && return
    seen[$path]=1
    name=${path##*/}
    name=${name%%.ko*}
    for pre in ${pre_of[${name//-/_}]:-}; do
        dep=$(resolve "$pre")
        [ -n "$dep" ] && visit "$dep"
    done
    for dep in ${deps_of[$path]}; do
        visit "$dep"
    done
    order+=("$path")
}
for module in "$@"; do
    path=$(resolve "$module")
    [ -n "$path" ] && visit "$path"
done

# Copy, uncompressed, under .ko names, then let depmod index that set.
stage=$tmp/modules/lib/modules/$release
mkdir -p "$stage"
: >"$stage/load-order"
for path in "${order[@]}"; do
    plain=${path%.ko*}.ko
    mkdir -p "$stage/$(dirname "$path")"
    case $path in
        *.ko) cp "$tree/$path" "$stage/$plain" ;;
        *.ko.xz) xz -dc "$tree/$path" >"$stage/$plain" ;;
        *.ko.zst) zstd -q -dc "$tree/$path" >"$stage/$plain" ;;
        *.ko.gz) gzip -dc "$tree/$path" >"$stage/$plain" ;;
        *) fail "unknown module file $path" ;;
    esac
    echo "$plain" >>"$stage/load-order"
done
# depmod wants these: what is built in, and the build's order of this set.
cp "$tree/modules.builtin" "$tree/modules.builtin.modinfo" "$stage/"
grep -Fx -f <(sed 's/\.ko$//' "$stage/load-order") <(sed 's/\.ko.*$//' "$tree/modules.order") |
    sed 's/$/.ko/' >"$stage/modules.order"
"$depmod" -b "$tmp/modules" "$release"

mv "$tmp/Image" "$image"
rm -rf "$modules_dir"
mv "$tmp/modules" "$modules_dir"
