#!/usr/bin/env bash
# Packs the guest's initramfs, an uncompressed newc cpio:
#   scripts/initramfs.sh OUT.cpio HERE MODULES_DIR VERSION_FILE BUSYBOX.deb RT_TESTS.deb LIBRARY.deb...
# HERE is guests/linux (init, partita.sh, jobs/); MODULES_DIR is what
# scripts/kernel.sh made; the LIBRARY debs (libc6, libnuma1) are searched for
# the shared libraries cyclictest, hackbench and dropbear need, and only
# those are taken (scripts/closure.sh). The ssh server comes from the
# environment: DROPBEAR_DEB, Debian's dropbear-bin, and SSH_AUTHORIZED_KEY,
# the public key root's logins are allowed with (scripts/ssh-key.sh).
set -euo pipefail

out=$1 here=$2 modules_dir=$3 version_file=$4 busybox_deb=$5 rt_tests_deb=$6
shift 6
programs=(usr/bin/cyclictest usr/bin/hackbench)

fail() {
    echo "guests/linux: $*" >&2
    exit 1
}

tmp=$(mktemp -d "$(dirname "$out")/.initramfs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root

. "$here/scripts/closure.sh"

mkdir -p "$root"/{bin,dev,proc,sys,tmp,mnt,root,etc,lib,usr/bin,usr/sbin,jobs}
ln -s bin "$root/sbin"

# busybox, and one link per applet. Its applet names are one sorted,
# NUL-separated table in the binary, from "[" and "[[" on; reading it spares
# running an arm64 program here.
busybox=$(unpack "$busybox_deb")/bin/busybox
[ -f "$busybox" ] || fail "$busybox_deb has no bin/busybox"
cp "$busybox" "$root/bin/busybox"
mapfile -t applets < <(LC_ALL=C tr '\0' '\n' <"$busybox" | LC_ALL=C awk '
    on && $0 == "" { exit }
    on { print; next }
    prev == "[" && $0 == "[[" { on = 1; print "["; print "[[" }
    { prev = $0 }')
[ "${#applets[@]}" -gt 50 ] || fail "found no applet table in busybox"
previous=
declare -A is_applet
for applet in "${applets[@]}"; do
    [[ $applet =~ ^[][a-z0-9_.-]+$ ]] || fail "busybox applet table has a strange entry: '$applet'"
    [[ $applet > $previous ]] || fail "busybox applet table is not sorted at '$applet'"
    previous=$applet
    is_applet[$applet]=1
done
for applet in sh mount insmod setsid cttyhack init poweroff reboot umount grep sed awk sort; do
    [ -n "${is_applet[$applet]:-}" ] || fail "busybox has no $applet applet"
done
for applet in "${applets[@]}"; do
    [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
done

# cyclictest and hackbench, with the loader and the libraries they load.
add_library_packages "$@"
copy_programs "$(unpack "$rt_tests_deb")" "${programs[@]}"

# The ssh server and its key tool, with what they load. Root logs in with
# the build's key alone (the server is started with -s: no passwords),
# and dropbear refuses an authorized_keys others may write.
: "${DROPBEAR_DEB:?the dropbear-bin package}" "${SSH_AUTHORIZED_KEY:?the public key to authorize}"
copy_programs "$(unpack "$DROPBEAR_DEB")" usr/sbin/dropbear usr/bin/dropbearkey
install -d -m 700 "$root/root/.ssh"
install -m 600 "$SSH_AUTHORIZED_KEY" "$root/root/.ssh/authorized_keys"
chmod 700 "$root/root"
echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
echo 'root:x:0:' >"$root/etc/group"
echo /bin/sh >"$root/etc/shells"
install -m 755 "$here/network" "$root/bin/partita-network"

# The kernel modules and their load order.
cp -a "$modules_dir/." "$root/"

# Our own: /init, busybox init's table and the shell's profile, the shell
# functions the jobs share, the jobs, and what the image is made of.
install -m 755 "$here/init" "$root/init"
install -m 644 "$here/inittab" "$root/etc/inittab"
install -m 644 "$here/profile" "$root/etc/profile"
install -m 644 "$here/partita.sh" "$root/lib/partita.sh"
for job in "$here"/jobs/*; do
    install -m 755 "$job" "$root/jobs/$(basename "$job")"
done
install -m 644 "$version_file" "$root/etc/partita-linux-version"

# Every file root's, every time 0: the same inputs give the same bytes.
find "$root" -exec touch -h -d @0 {} +
(cd "$root" && find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort |
    cpio -o -H newc -R 0:0 --reproducible --quiet) >"$tmp/initramfs.cpio"

# /dev/console, which the kernel opens for /init before anything is
# mounted, is a device node: cpio would need root to read one from a
# directory, so it is written here as a second archive (the kernel unpacks
# archives one after the other) by hand.
newc() { # NAME MODE RDEVMAJOR RDEVMINOR: one header and name, no data
    local name=$1 namesize=$((${#1} + 1))
    printf '070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X' \
        0 "$2" 0 0 1 0 0 0 0 "$3" "$4" "$namesize" 0
    printf '%s\0' "$name"
    # header (110) + name, padded to 4 bytes
    head -c $(((4 - (110 + namesize) % 4) % 4)) /dev/zero
}
{
    newc dev/console $((0020600)) 5 1
    newc TRAILER!!! 0 0 0
} >"$tmp/console.cpio"
size=$(stat -c %s "$tmp/console.cpio")
head -c $(((512 - size % 512) % 512)) /dev/zero >>"$tmp/console.cpio"
cat "$tmp/console.cpio" >>"$tmp/initramfs.cpio"

mv "$tmp/initramfs.cpio" "$out"
