#!/usr/bin/env bash
# Boots the Linux guest in QEMU alone (no hypervisor) and checks what
# README.md promises: the marker line, a shell prompt that runs commands, the
# PL011 interrupt, the disk, and the four jobs. Prints what it saw, the wall
# time to the marker, and "N passed, M failed".
#   scripts/check-native.sh OUT_DIR   (OUT_DIR: where Image, initramfs.cpio
#                                      and disk.ext4 are; make check passes it)
# QEMU and QEMU_CPU (default cortex-a72, as Partita's runs) may be set.
set -uo pipefail

out=$1
qemu=${QEMU:-qemu-system-aarch64}
cpu=${QEMU_CPU:-cortex-a72}
passed=0 failed=0

ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAILED: $*"; failed=$((failed + 1)); }

qemu_cmd() { # APPEND: the command line in the array cmd
    cmd=("$qemu" -M virt,gic-version=3 -cpu "$cpu" -smp 2 -m 1G -nographic -nic none
        -kernel "$out/Image" -initrd "$out/initramfs.cpio" -append "console=ttyAMA0${1:+ $1}"
        -drive "if=none,file=$out/disk.ext4,format=raw,id=disk,snapshot=on"
        -device virtio-blk-device,drive=disk)
}

# A job: boot, wait for its result line and the power-off, report.
job() { # NAME RESULT_REGEX
    local name=$1 want=$2 start line marker= result= log
    log=$(mktemp)
    start=$EPOCHREALTIME
    while IFS= read -r line; do
        line=${line%$'\r'}
        echo "$line" >>"$log"
        if [ -z "$marker" ] && [[ $line =~ ^partita-linux:\ init\ .*\ cpus=[0-9]+$ ]]; then
            marker=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
            echo "   $line  (after ${marker} s)"
        elif [[ $line =~ ^partita-linux: ]]; then
            echo "   $line"
            [[ $line =~ $want ]] && result=$line
        fi
    done < <(qemu_cmd "partita.job=$name" && timeout 300 "${cmd[@]}" 2>&1)
    if [ -n "$marker" ] && [ -n "$result" ] && grep -q "partita-linux: job $name exit=0" "$log"; then
        ok "job $name"
    else
        bad "job $name (log: $log)"
        return
    fi
    rm -f "$log"
}

# The shell: one boot, commands typed at the prompt through a coprocess.
interactive() {
    local buffer= char marker= log
    log=$(mktemp)
    qemu_cmd ""
    coproc QEMU_SHELL { timeout 300 "${cmd[@]}" 2>&1; }
    # Reads until the prompt ("...# ", then busybox's cursor query ESC[6n,
    # which nobody answers here), keeping what came before in $buffer.
    prompt() {
        buffer=
        while IFS= read -r -N 1 -t 60 char <&"${QEMU_SHELL[0]}"; do
            buffer+=$char
            # (No time here: reading a byte at a time lags behind.)
            if [ -z "$marker" ] && [[ $buffer =~ partita-linux:\ init\ [^$'\r\n']*cpus=[0-9]+ ]]; then
                marker=1
                echo "   ${BASH_REMATCH[0]}"
            fi
            [[ $buffer =~ partita-linux:[^$'\r\n']*\#\ ($'\e'\[6n)?$ ]] && { echo -n "$buffer" >>"$log"; return 0; }
        done
        echo -n "$buffer" >>"$log"
        return 1
    }
    run() { echo "$1" >&"${QEMU_SHELL[1]}"; prompt; }

    if prompt; then ok "shell prompt"; else bad "no shell prompt (log: $log)"; return; fi
    run "uname -r"
    if [[ $buffer =~ [0-9]+\.[0-9]+\.[0-9]+-[^$'\r\n']+ ]]; then ok "uname -r: ${BASH_REMATCH[0]}"; else bad "uname -r"; fi
    run "grep pl011 /proc/interrupts"
    if [[ $buffer =~ [^$'\n']*uart-pl011 ]]; then ok "interrupts:${BASH_REMATCH[0]}"; else bad "no pl011 in /proc/interrupts"; fi
    run "grep virtio /proc/interrupts"
    if [[ $buffer =~ [^$'\n']*virtio0 ]]; then ok "interrupts:${BASH_REMATCH[0]}"; else bad "no virtio0 in /proc/interrupts"; fi
    run "mount -t ext4 /dev/vda /mnt && cat /mnt/hello.txt; umount /mnt"
    if [[ $buffer == *"partita disk: made at build time"* ]]; then ok "mount /dev/vda: hello.txt read"; else bad "mount /dev/vda"; fi
    echo "poweroff" >&"${QEMU_SHELL[1]}"
    wait "$QEMU_SHELL_PID" 2>/dev/null
    [ "$failed" -eq 0 ] && rm -f "$log"
}

qemu_cmd "[partita.job=NAME]"
echo "${cmd[*]}"
echo "shell:"
interactive
echo "job disk:"
job disk '^partita-linux: disk hello\.txt=partita disk: made at build time release=match$'
echo "job hackbench:"
job hackbench '^partita-linux: hackbench time=[0-9.]+$'
echo "job cyclictest:"
job cyclictest '^partita-linux: cyclictest min=[0-9]+ avg=[0-9]+ max=[0-9]+$'
echo "job tools:"
job tools '^partita-linux: gdb prologue=1 stepi=8 hbreak=12 rwatch=[0-9]+ watch=4$'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
