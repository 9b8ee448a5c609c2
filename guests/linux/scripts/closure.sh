# Sourced by initramfs.sh and disk.sh: copies programs out of unpacked
# Debian packages into a root folder together with what the dynamic linker
# will look for, the program interpreter and the closure of their DT_NEEDED
# libraries, found by soname in the library packages given. Nothing arm64 is
# run: readelf reads the ELF headers.
#
# The caller sets root (the folder being filled) and tmp (scratch), and
# defines fail MESSAGE. READELF names the arm64 readelf (default
# aarch64-linux-gnu-readelf).
#   unpack DEB                   prints the folder DEB is unpacked in
#   add_library_packages DEB...  unpacks them as where libraries are found
#   copy_programs FROM PATH...   copies the programs FROM/PATH and their closure

readelf=${READELF:-aarch64-linux-gnu-readelf}
library_roots=()
declare -A closure_taken

unpack() {
    local dir
    dir=$tmp/debs/$(basename "$1" .deb)
    if [ ! -d "$dir" ]; then
        mkdir -p "$dir"
        dpkg-deb -x "$1" "$dir"
    fi
    echo "$dir"
}

add_library_packages() {
    local deb
    for deb in "$@"; do
        library_roots+=("$(unpack "$deb")")
    done
}

# copy_path FROM PATH: copies PATH, and every symlink on the way to the
# file, into $root; prints where the file itself is.
copy_path() {
    local from=$1 path=$2 target hops=0
    while :; do
        if [ ! -e "$root/$path" ] && [ ! -L "$root/$path" ]; then
            mkdir -p "$root/$(dirname "$path")"
            cp -a "$from/$path" "$root/$path"
        fi
        [ -L "$from/$path" ] || break
        target=$(readlink "$from/$path")
        case $target in
            /*) path=${target#/} ;;
            *) path=$(dirname "$path")/$target ;;
        esac
        path=$(realpath -ms --relative-to=/ "/$path")
        hops=$((hops + 1))
        [ "$hops" -lt 10 ] || fail "too many symlinks at $path"
    done
    echo "$path"
}

# find_library NAME: "ROOT PATH" of the first library package that has
# NAME (a soname, or the interpreter's absolute path); nothing if none has.
find_library() {
    local name=$1 dir lib
    if [[ $name == /* ]]; then
        for lib in "${library_roots[@]}"; do
            [ -e "$lib$name" ] && { echo "$lib ${name#/}"; return; }
        done
        return
    fi
    for lib in "${library_roots[@]}"; do
        for dir in lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu lib usr/lib; do
            if [ -e "$lib/$dir/$name" ] || [ -L "$lib/$dir/$name" ]; then
                echo "$lib $dir/$name"
                return
            fi
        done
    done
}

# Breadth first over the programs and what they load; every soname no
# package has is named in one error, with who needs it, so that a new
# Debian version that links one more library says which.
copy_programs() {
    local from=$1 program file found name headers missing=()
    shift
    local queue=()
    for program in "$@"; do
        [ -f "$from/$program" ] || fail "$(basename "$from").deb has no $program"
        queue+=("$(copy_path "$from" "$program")")
    done
    while [ "${#queue[@]}" -gt 0 ]; do
        file=${queue[0]}
        queue=("${queue[@]:1}")
        headers=$("$readelf" -ldW "$root/$file")
        for name in $(sed -n -e 's/.*\[Requesting program interpreter: \(.*\)\]/\1/p' \
            -e 's/.*(NEEDED).*\[\(.*\)\]/\1/p' <<<"$headers"); do
            [ -n "${closure_taken[$name]:-}" ] && continue
            closure_taken[$name]=1
            found=$(find_library "$name")
            if [ -z "$found" ]; then
                missing+=("$name (for $file)")
                continue
            fi
            queue+=("$(copy_path "${found%% *}" "${found#* }")")
        done
    done
    [ "${#missing[@]}" -eq 0 ] ||
        fail "no package given has $(printf '%s, ' "${missing[@]}" | sed 's/, $//'): add the packages that ship them to scripts/select.sh"
}
