//! `cargo xtask setup`: installs what the project needs, and nothing twice.
//!
//! The eBPF side can't use the usual aya recipe here (nightly + `-Z build-std` + `rust-src`,
//! which rustup can't download on these machines). What works, and is installed below:
//! Debian's Rust (`rustc-web`, with a prebuilt `core` for `bpfel-unknown-none` in
//! `libstd-rust-web-dev-bpf`) registered as the rustup toolchain `debian`, and `bpf-linker`
//! built against Debian's LLVM 22.
use std::process::Command;

use anyhow::{Context as _, bail};

use crate::util::{cargo, exec, which};

/// Debian packages, and why each is needed.
const PACKAGES: &[(&str, &str)] = &[
    ("clang", "xsk-rs builds libxdp/libbpf from C"),
    ("libelf-dev", "libbpf"),
    ("zlib1g-dev", "libbpf"),
    ("libpcap-dev", "libxdp's build"),
    ("pkg-config", "libxdp's build"),
    ("m4", "libxdp's build"),
    ("iproute2", "the lab (ip netns, veth)"),
    (
        "ethtool",
        "turning off TX checksum offload on the exchange veth",
    ),
    ("rustc-web", "Debian's rustc for the eBPF build"),
    ("cargo-web", "Debian's cargo for the eBPF build"),
    (
        "libstd-rust-web-dev-bpf",
        "prebuilt core for bpfel-unknown-none",
    ),
    ("llvm-22-dev", "bpf-linker links against it"),
    (
        "rust-web-clippy",
        "linting the eBPF crate with Debian's toolchain",
    ),
    ("sockperf", "the outside reference for kernel-UDP latency"),
    (
        "tcpdump",
        "the trust tests capture every order on the exchange's wire",
    ),
    (
        "rt-tests",
        "cyclictest, the outside reference for the hotpath wake-up experiment",
    ),
    (
        "llvm-22",
        "llvm-profdata matching rustc's LLVM 22, for the hotpath PGO experiment",
    ),
    (
        "linux-perf",
        "perf: TLB-miss counts where the machine exposes a PMU",
    ),
    (
        "tshark",
        "Wireshark's own SoupBinTCP dissector reads a capture of the order session (the orders test)",
    ),
    (
        "valgrind",
        "cachegrind: the hotpath suite's instruction and simulated cache-miss counts (no PMU here)",
    ),
];

/// The bpf-linker release that fits rustc 1.96 / LLVM 22.
const BPF_LINKER_VERSION: &str = "0.13.0";

/// What to do.
#[derive(Debug, clap::Args)]
pub(crate) struct Options {
    /// Only report what is missing; install nothing.
    #[arg(long)]
    pub(crate) check: bool,
}

/// What `setup` found missing.
#[derive(Debug, Default)]
pub(crate) struct Missing {
    packages: Vec<&'static str>,
    bpf_linker: bool,
    toolchain: bool,
}

impl Missing {
    fn is_empty(&self) -> bool {
        self.packages.is_empty() && !self.bpf_linker && !self.toolchain
    }
}

/// Finds what is missing without changing anything.
pub(crate) fn survey() -> Missing {
    let packages = PACKAGES
        .iter()
        .filter(|(p, _)| !package_installed(p))
        .map(|(p, _)| *p)
        .collect();
    let bpf_linker = !Command::new(bpf_linker_path())
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let toolchain = !Command::new("rustup")
        .args(["toolchain", "list"])
        .output()
        .is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.starts_with("debian"))
        });
    Missing {
        packages,
        bpf_linker,
        toolchain,
    }
}

fn bpf_linker_path() -> std::path::PathBuf {
    if which("bpf-linker") {
        return "bpf-linker".into();
    }
    let home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cargo")))
        .unwrap_or_default();
    home.join("bin/bpf-linker")
}

fn package_installed(name: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", name])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
}

pub(crate) fn run(Options { check }: Options) -> anyhow::Result<()> {
    let missing = survey();
    if missing.is_empty() {
        eprintln!("setup: nothing to install; everything is in place");
        return Ok(());
    }
    if check {
        report(&missing);
        bail!("setup is incomplete: run `cargo xtask setup`");
    }
    install(&missing)
}

/// Installs whatever is missing; a no-op (with a line saying so) when nothing is.
pub(crate) fn ensure() -> anyhow::Result<()> {
    let missing = survey();
    if missing.is_empty() {
        return Ok(());
    }
    install(&missing)
}

fn report(m: &Missing) {
    for p in &m.packages {
        let why = PACKAGES
            .iter()
            .find(|(n, _)| n == p)
            .map_or("", |(_, w)| *w);
        eprintln!("missing Debian package {p} ({why})");
    }
    if m.bpf_linker {
        eprintln!("missing bpf-linker {BPF_LINKER_VERSION} (links the XDP program)");
    }
    if m.toolchain {
        eprintln!("missing rustup toolchain `debian` (Debian's rustc, for the eBPF build)");
    }
}

fn install(m: &Missing) -> anyhow::Result<()> {
    report(m);
    let started = std::time::Instant::now();
    if !m.packages.is_empty() {
        crate::util::require_root("installing Debian packages")?;
        exec(Command::new("apt-get").args(["update", "-q"]))?;
        exec(
            Command::new("apt-get")
                .env("DEBIAN_FRONTEND", "noninteractive")
                .args(["install", "-y", "-q", "--no-install-recommends"])
                .args(&m.packages),
        )?;
    }
    if m.toolchain {
        exec(Command::new("rustup").args(["toolchain", "link", "debian", "/usr"]))
            .context("registering Debian's rustc as the rustup toolchain `debian`")?;
    }
    if m.bpf_linker {
        // Without LLVM_PREFIX it looks for libLLVM in /usr and fails to link.
        exec(
            cargo()
                .env("LLVM_PREFIX", "/usr/lib/llvm-22")
                .args(["install", "bpf-linker", "--version", BPF_LINKER_VERSION])
                .args(["--no-default-features", "--features", "llvm-22"]),
        )
        .context("building bpf-linker")?;
    }
    eprintln!("setup: done in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}
