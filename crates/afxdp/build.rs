//! Builds the XDP program (`xdp-ebpf`) for the BPF target and leaves its three objects in
//! `OUT_DIR` (`xdp-ebpf`; `xdp-ebpf-stages` with stage timing compiled in; `xdp-ebpf-run`
//! with each run timed at its two ends), where
//! `src/xdp.rs` embeds them.
//!
//! The eBPF build needs a toolchain that plain `cargo build` machines don't have (Debian's
//! rustc with a prebuilt `core` for `bpfel-unknown-none`, registered as the rustup toolchain
//! `debian`, and `bpf-linker`); `cargo xtask setup` installs it. Without it this script leaves
//! an empty object and a warning, so the rest of the workspace still builds and tests; the
//! binaries then say how to get the real one. `XDP_EBPF_REQUIRED=1` (set by CI and xtask)
//! turns that into a hard error.
use std::{env, fs, path::PathBuf};

/// The crates that use unstable features on the BPF target. Naming them (rather than `1`)
/// unlocks those features in those crates only, and keeps aya-build from asking for
/// `-Z build-std`, which would need a `rust-src` these machines don't have. The two timed
/// binaries (`xdp_ebpf_stages`, `xdp_ebpf_run`) need none since the program became a library;
/// they stay named because dropping them moved the run-timed object by one instruction, and
/// the measured figures are of this build (docs/results/2026-12-06-house-by-role-amd-2vcpu).
const RUSTC_BOOTSTRAP: &str = "aya_ebpf,aya_ebpf_bindings,aya_ebpf_cty,aya_ebpf_macros,xdp_ebpf,xdp_ebpf_stages,xdp_ebpf_run,xdp_common";

#[expect(
    unsafe_code,
    reason = "env::set_var is unsafe since edition 2024; a build script is single-threaded"
)]
fn main() -> anyhow::Result<()> {
    println!("cargo:rerun-if-env-changed=XDP_EBPF_REQUIRED");
    println!("cargo:rerun-if-changed=../../ebpf/xdp-common/src");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let object = out_dir.join("xdp-ebpf");
    let required = env::var_os("XDP_EBPF_REQUIRED").is_some_and(|v| v == "1");

    let manifest_dir = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root_dir = PathBuf::from(manifest_dir).join("../../ebpf/xdp-ebpf");
    let root_dir = root_dir.to_str().expect("workspace path is UTF-8");

    // SAFETY: build scripts are single-threaded; nothing else reads the environment here.
    unsafe { env::set_var("RUSTC_BOOTSTRAP", RUSTC_BOOTSTRAP) };
    let built = aya_build::build_ebpf(
        [aya_build::Package {
            name: "xdp-ebpf",
            root_dir,
            ..Default::default()
        }],
        aya_build::Toolchain::Custom("debian"),
    );
    match built {
        Ok(()) => Ok(()),
        Err(err) if !required => {
            println!(
                "cargo:warning=the XDP program was not built ({err:#}); the AF_XDP path will not \
                 work until you run `cargo xtask setup`"
            );
            fs::write(&object, [])?;
            fs::write(out_dir.join("xdp-ebpf-stages"), [])?;
            fs::write(out_dir.join("xdp-ebpf-run"), [])?;
            Ok(())
        }
        Err(err) => Err(err.context(
            "building the XDP program failed; `cargo xtask setup` installs the eBPF toolchain",
        )),
    }
}
