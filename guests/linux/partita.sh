# Shell functions /init and the jobs share; installed as /lib/partita.sh.

# Prints one line for whoever reads the console, in the form tests parse.
say() {
    echo "partita-linux: $*"
}

# cmdline_value NAME: prints NAME's value from the kernel command line,
# NAME=word or NAME="several words"; fails if NAME is not there.
cmdline_value() {
    local cmdline
    read -r cmdline </proc/cmdline
    cmdline=" $cmdline "
    case $cmdline in
    *" $1=\""*)
        cmdline=${cmdline#*" $1=\""}
        echo "${cmdline%%\"*}"
        ;;
    *" $1="*)
        cmdline=${cmdline#*" $1="}
        echo "${cmdline%% *}"
        ;;
    *) return 1 ;;
    esac
}

# Unmounts every filesystem on a block device, the innermost first (busybox
# init runs it before poweroff, reboot and halt); umount -r makes one still
# in use read-only instead.
unmount_disks() {
    local dir
    for dir in $(awk '$1 ~ /^\/dev\// { print $2 }' /proc/mounts | sort -r); do
        umount -r "$dir" 2>/dev/null
    done
}
