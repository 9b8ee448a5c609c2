#!/usr/bin/env bash
# Makes the key that logs in to the guest over ssh, and an ssh configuration
# that uses it:
#   scripts/ssh-key.sh DIR
# DIR/id_ed25519 (readable by its owner alone) and id_ed25519.pub, whose
# public half the initramfs authorizes for root; DIR/config, for
#   ssh -F DIR/config -p PORT linux
# Run again, it keeps the key and rewrites only the configuration.
set -euo pipefail

dir=$(realpath -m "$1")
key=$dir/id_ed25519

fail() {
    echo "guests/linux: $*" >&2
    exit 1
}

umask 077
mkdir -p "$dir"
if [ ! -f "$key" ] || [ ! -f "$key.pub" ]; then
    command -v ssh-keygen >/dev/null || fail "ssh-keygen not found (Debian package openssh-client)"
    tmp=$(mktemp -d "$dir/.key.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    ssh-keygen -q -t ed25519 -N '' -C partita-linux -f "$tmp/id_ed25519"
    mv "$tmp/id_ed25519.pub" "$key.pub"
    mv "$tmp/id_ed25519" "$key"
fi
chmod 644 "$key.pub"

# The guest makes a new host key at every boot (it lives in RAM, and a key
# shipped in the initramfs would be readable by anyone who can read the
# build), so there is no host key to remember; the forward listens on
# 127.0.0.1 alone.
cat >"$dir/config.tmp" <<CONFIG
# Made by guests/linux/scripts/ssh-key.sh: ssh -F $dir/config -p PORT linux
Host *
    HostName 127.0.0.1
    User root
    IdentityFile $key
    IdentitiesOnly yes
    PasswordAuthentication no
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    LogLevel ERROR
CONFIG
chmod 644 "$dir/config.tmp"
mv "$dir/config.tmp" "$dir/config"
touch "$key" "$key.pub"
