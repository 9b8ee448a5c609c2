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
