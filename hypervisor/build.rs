//! Links the hypervisor with its own linker script, at the address its
//! board's loader puts it: an arm64 Image lands 2 MiB into RAM.
fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let out = std::env::var("OUT_DIR").unwrap();
    // QEMU `virt`'s RAM starts at 1 GiB, the ZynqMP's DDR at 0.
    let load = if std::env::var_os("CARGO_FEATURE_ZCU102").is_some() { 0x0020_0000 } else { 0x4020_0000 };
    std::fs::write(format!("{out}/load_address.ld"), format!("PARTITA_LOAD_ADDRESS = {load:#x};\n")).unwrap();
    println!("cargo:rustc-link-arg-bins=-L{out}");
    println!("cargo:rustc-link-arg-bins=-T{dir}/linker.ld");
    println!("cargo:rerun-if-changed=linker.ld");
}
