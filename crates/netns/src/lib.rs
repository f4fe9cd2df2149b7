//! The lab: an exchange namespace and a trader namespace joined by one veth pair.
//!
//! ```text
//!   netns <name>-ex                          netns <name>-tr
//!  ┌───────────────────────┐               ┌───────────────────────┐
//!  │ replay / exchange     │               │ trader (XDP + AF_XDP) │
//!  │ ex0 198.18.0.1/30     │◄── veth ────► │ tr0 198.18.0.2/30     │
//!  │ 02:00:c6:12:00:01     │               │ 02:00:c6:12:00:02     │
//!  └───────────────────────┘               └───────────────────────┘
//! ```
//!
//! Addresses come from 198.18.0.0/15 (RFC 2544, benchmarking), there is no default route and
//! nothing is created in the root namespace: the veth is made inside the exchange namespace
//! with its peer placed straight into the trader's, so concurrent labs never collide on an
//! interface name and no lab packet can leave the machine.
//!
//! The lab is built with iproute2's `ip` (each command is printed to stderr before it runs,
//! so a user sees exactly what is done to the machine). [`Lab`] is a guard: dropping it
//! removes the namespaces, also while a test panics.
#![forbid(unsafe_code)]

mod caps;
mod child;
mod ns;

use std::{
    fmt,
    io::Write as _,
    net::Ipv4Addr,
    path::Path,
    process::{Command, Output},
};

pub use caps::{Capability, check_capabilities};
pub use child::{ChildGuard, Signal, signal};
pub use mac::{BadMac, Mac};

mod mac;

/// The lab's fixed layout: every binary's defaults and xtask's command lines derive from these
/// (`LabConfig::new` uses them too), so a port or an address is written down once. (What the
/// feed carries and the strategy trades, its session, stock and n, is `paths::market`.)
pub mod lab {
    use std::net::{Ipv4Addr, SocketAddrV4};

    use crate::Mac;

    /// The market-data UDP port (the XDP program redirects exactly this one).
    pub const MD_PORT: u16 = 26400;
    /// The UDP port orders go to, on the exchange side: the trader's default gateway
    /// (`trader --order-to`), the XDP program's own orders included.
    pub const ORDER_PORT: u16 = xdp_common::ORDER_PORT;
    /// The UDP port the replay serves MoldUDP64 re-requests on (`replay --retransmit`), on the
    /// exchange side.
    pub const RETRANSMIT_PORT: u16 = 26402;
    /// The exchange side's interface, inside its namespace.
    pub const EXCHANGE_IF: &str = "ex0";
    /// The trader side's interface, inside its namespace.
    pub const TRADER_IF: &str = "tr0";
    /// The exchange's address (RFC 2544's benchmarking range, 198.18.0.0/15).
    pub const EXCHANGE_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
    /// The trader's address.
    pub const TRADER_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
    /// Prefix length of both addresses: a /30, the two ends and nothing else.
    pub const PREFIX_LEN: u8 = 30;
    /// The exchange's MAC (locally administered; 0xc6 0x12 spell 198.18).
    pub const EXCHANGE_MAC: Mac = Mac([0x02, 0x00, 0xc6, 0x12, 0x00, 0x01]);
    /// The trader's MAC.
    pub const TRADER_MAC: Mac = Mac([0x02, 0x00, 0xc6, 0x12, 0x00, 0x02]);
    /// Where the trader takes market data.
    pub const TRADER_MD: SocketAddrV4 = SocketAddrV4::new(TRADER_IP, MD_PORT);
    /// Where the exchange takes orders.
    pub const EXCHANGE_ORDERS: SocketAddrV4 = SocketAddrV4::new(EXCHANGE_IP, ORDER_PORT);
    /// The UDP port the replay sends line A of its feed from: the feed's source, which the
    /// bench names to the trader (`--feed-source`).
    pub const FEED_SOURCE_PORT: u16 = 26404;
    /// The UDP port the replay sends line B from.
    pub const FEED_SOURCE_PORT_B: u16 = 26405;
    /// Line A's source.
    pub const FEED_SOURCE: SocketAddrV4 = SocketAddrV4::new(EXCHANGE_IP, FEED_SOURCE_PORT);
    /// Line B's source.
    pub const FEED_SOURCE_B: SocketAddrV4 = SocketAddrV4::new(EXCHANGE_IP, FEED_SOURCE_PORT_B);
    /// Where the replay serves re-requests.
    pub const RETRANSMIT_SERVER: SocketAddrV4 = SocketAddrV4::new(EXCHANGE_IP, RETRANSMIT_PORT);
}
pub use ns::{NetnsGuard, enter, in_netns};

/// Prefix of every namespace this project creates; `netns-status` and the CI check look for it.
pub const PREFIX: &str = "t2t";

/// Where `ip netns` keeps its namespace handles.
pub const NETNS_RUN_DIR: &str = "/var/run/netns";

/// Errors of lab management.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A lab name that would make invalid namespace names.
    #[error(
        "invalid lab name {name:?}: use 1-{max} characters from [a-z0-9-], starting with a letter"
    )]
    InvalidName {
        /// The name given.
        name: String,
        /// The longest name accepted.
        max: usize,
    },
    /// The process lacks a capability the operation needs.
    #[error(
        "missing privilege: {} (run as root, e.g. `sudo -E cargo xtask ...`)",
        .missing.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ")
    )]
    MissingPrivilege {
        /// The capabilities that are not in the effective set.
        missing: Vec<Capability>,
    },
    /// A required tool is not installed.
    #[error("`{tool}` not found: install {package} (`cargo xtask setup` does)")]
    ToolMissing {
        /// The executable.
        tool: &'static str,
        /// The Debian package that provides it.
        package: &'static str,
    },
    /// A command ran and failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// A system call failed.
    #[error("{op} failed: {source}")]
    Io {
        /// What was being done.
        op: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// The lab's layout. Everything derives from the lab name, so two labs with different names
/// can run side by side (tests use one per test).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabConfig {
    /// The lab name; namespace names are `<name>-ex` and `<name>-tr`.
    pub name: String,
    /// Interface name inside the exchange namespace.
    pub exchange_if: String,
    /// Interface name inside the trader namespace.
    pub trader_if: String,
    /// Exchange address (198.18.0.0/15).
    pub exchange_ip: Ipv4Addr,
    /// Trader address (198.18.0.0/15).
    pub trader_ip: Ipv4Addr,
    /// Prefix length of both addresses.
    pub prefix_len: u8,
    /// Exchange MAC (locally administered).
    pub exchange_mac: Mac,
    /// Trader MAC (locally administered).
    pub trader_mac: Mac,
    /// Turn off TX checksum offload on the exchange veth, so frames that reach the trader carry
    /// complete UDP checksums (on veth the kernel otherwise leaves a partial one).
    pub exchange_tx_csum_off: bool,
    /// RX and TX queues on each veth end (1 unless a test of multi-queue serving asks more).
    pub queues: u16,
}

/// Longest lab name: namespace names stay short and readable.
const MAX_NAME: usize = 24;

impl LabConfig {
    /// The default lab, named [`PREFIX`].
    pub fn default_lab() -> Self {
        Self::new(PREFIX).expect("the default name is valid")
    }

    /// A lab with the given name and the standard addresses.
    pub fn new(name: &str) -> Result<Self, Error> {
        let valid = !name.is_empty()
            && name.len() <= MAX_NAME
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !valid {
            return Err(Error::InvalidName {
                name: name.to_owned(),
                max: MAX_NAME,
            });
        }
        Ok(Self {
            name: name.to_owned(),
            exchange_if: lab::EXCHANGE_IF.into(),
            trader_if: lab::TRADER_IF.into(),
            exchange_ip: lab::EXCHANGE_IP,
            trader_ip: lab::TRADER_IP,
            prefix_len: lab::PREFIX_LEN,
            exchange_mac: lab::EXCHANGE_MAC,
            trader_mac: lab::TRADER_MAC,
            exchange_tx_csum_off: true,
            queues: 1,
        })
    }

    /// The same lab with `queues` RX and TX queues on each veth end.
    #[must_use]
    pub fn with_queues(mut self, queues: u16) -> Self {
        self.queues = queues.max(1);
        self
    }

    /// A lab name unique to this process and `tag`, for tests: `t2t-<tag>-<pid>`.
    pub fn for_test(tag: &str) -> Self {
        let name = format!("{PREFIX}-{tag}-{}", std::process::id());
        Self::new(&name).expect("test lab names are valid")
    }

    /// The exchange namespace's name.
    pub fn exchange_ns(&self) -> String {
        format!("{}-ex", self.name)
    }

    /// The trader namespace's name.
    pub fn trader_ns(&self) -> String {
        format!("{}-tr", self.name)
    }
}

/// What [`Lab::up`] found before it built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// Nothing: a fresh lab.
    Nothing,
    /// A complete lab with this layout, kept as it was.
    Intact,
    /// Part of a lab (a killed run, a different layout): removed and rebuilt.
    Repaired,
}

/// A lab that exists. Dropping it removes both namespaces (and with them the veth pair and
/// any XDP program attached to it) unless [`Lab::persist`] was called.
#[derive(Debug)]
pub struct Lab {
    config: LabConfig,
    found: Found,
    remove_on_drop: bool,
}

impl Lab {
    /// Builds the lab, or checks the one that is there. A complete lab is kept as it is
    /// ([`Found::Intact`]); a partial one is removed and built anew ([`Found::Repaired`]).
    pub fn up(config: LabConfig) -> Result<Lab, Error> {
        check_capabilities(&[Capability::NetAdmin, Capability::SysAdmin])?;
        require_ip()?;
        let ex = config.exchange_ns();
        let tr = config.trader_ns();
        let mut found = Found::Nothing;
        if ns_exists(&ex) || ns_exists(&tr) {
            if is_intact(&config) {
                return Ok(Lab {
                    config,
                    found: Found::Intact,
                    remove_on_drop: true,
                });
            }
            remove(&config)?;
            found = Found::Repaired;
        }
        // From here on, a failure must not leave half a lab.
        let lab = Lab {
            config,
            found,
            remove_on_drop: true,
        };
        lab.build()?;
        Ok(lab)
    }

    fn build(&self) -> Result<(), Error> {
        let c = &self.config;
        let (ex, tr) = (c.exchange_ns(), c.trader_ns());
        for ns in [&ex, &tr] {
            ip(&["netns", "add", ns])?;
            // No IPv6: its router solicitations and MLD reports would be the only traffic in
            // the lab that isn't ours, and they wake the trader's core for nothing.
            for key in ["all", "default"] {
                run(Command::new("ip").args([
                    "netns",
                    "exec",
                    ns,
                    "sysctl",
                    "-qw",
                    &format!("net.ipv6.conf.{key}.disable_ipv6=1"),
                ]))?;
            }
        }
        // Created inside the exchange namespace with the peer placed straight into the
        // trader's: no interface ever exists in the root namespace.
        let queues = c.queues.to_string();
        ip(&[
            "-n",
            &ex,
            "link",
            "add",
            &c.exchange_if,
            "numtxqueues",
            &queues,
            "numrxqueues",
            &queues,
            "type",
            "veth",
            "peer",
            "name",
            &c.trader_if,
            "netns",
            &tr,
            "numtxqueues",
            &queues,
            "numrxqueues",
            &queues,
        ])?;
        for (ns, dev, mac, addr) in [
            (&ex, &c.exchange_if, &c.exchange_mac, c.exchange_ip),
            (&tr, &c.trader_if, &c.trader_mac, c.trader_ip),
        ] {
            ip(&["-n", ns, "link", "set", dev, "address", &mac.to_string()])?;
            ip(&[
                "-n",
                ns,
                "addr",
                "add",
                &format!("{addr}/{}", c.prefix_len),
                "dev",
                dev,
            ])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        // The trader's order gateway (the exchange) pinned in its neighbour table, as a
        // trading host pins its gateway's MAC: the trader reads it once at start for the
        // frames it builds, and no ARP reply on the segment can move it.
        ip(&[
            "-n",
            &tr,
            "neigh",
            "replace",
            &c.exchange_ip.to_string(),
            "lladdr",
            &c.exchange_mac.to_string(),
            "dev",
            &c.trader_if,
            "nud",
            "permanent",
        ])?;
        if c.exchange_tx_csum_off {
            if which("ethtool") {
                run(Command::new("ip").args([
                    "netns",
                    "exec",
                    &ex,
                    "ethtool",
                    "-K",
                    &c.exchange_if,
                    "tx",
                    "off",
                ]))?;
            } else {
                eprintln!(
                    "warning: ethtool not found; the exchange veth keeps TX checksum offload, so \
                     frames reaching the trader carry partial UDP checksums"
                );
            }
        }
        Ok(())
    }

    /// The layout.
    pub fn config(&self) -> &LabConfig {
        &self.config
    }

    /// What `up` found.
    pub fn found(&self) -> Found {
        self.found
    }

    /// Keeps the lab after this guard is dropped (`cargo xtask netns-up`).
    pub fn persist(mut self) -> LabConfig {
        self.remove_on_drop = false;
        self.config.clone()
    }

    /// Removes the lab now, reporting errors (drop only prints them).
    pub fn down(mut self) -> Result<(), Error> {
        self.remove_on_drop = false;
        remove(&self.config)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if self.remove_on_drop
            && let Err(e) = remove(&self.config)
        {
            eprintln!("warning: failed to remove lab {}: {e}", self.config.name);
        }
    }
}

/// Removes a lab by name; removing one that isn't there is not an error. Returns whether
/// anything was removed.
pub fn down(config: &LabConfig) -> Result<bool, Error> {
    check_capabilities(&[Capability::NetAdmin, Capability::SysAdmin])?;
    require_ip()?;
    let existed = ns_exists(&config.exchange_ns()) || ns_exists(&config.trader_ns());
    remove(config)?;
    Ok(existed)
}

fn remove(config: &LabConfig) -> Result<(), Error> {
    for ns in [config.exchange_ns(), config.trader_ns()] {
        if ns_exists(&ns) {
            // Deleting the namespace destroys the veth end in it, which destroys its peer.
            ip(&["netns", "delete", &ns])?;
        }
    }
    Ok(())
}

/// True when both namespaces exist with the veth ends up and addressed as configured.
fn is_intact(c: &LabConfig) -> bool {
    let check = |ns: &str, dev: &str, mac: &Mac, addr: Ipv4Addr| {
        let out = Command::new("ip")
            .args(["-n", ns, "-o", "addr", "show", "dev", dev])
            .output();
        let link = Command::new("ip")
            .args(["-n", ns, "-o", "link", "show", "dev", dev])
            .output();
        match (out, link) {
            (Ok(out), Ok(link)) if out.status.success() && link.status.success() => {
                let out = String::from_utf8_lossy(&out.stdout);
                let link = String::from_utf8_lossy(&link.stdout);
                out.contains(&format!("{addr}/{}", c.prefix_len))
                    && link.contains(&mac.to_string())
                    && link.contains("state UP")
            }
            _ => false,
        }
    };
    ns_exists(&c.exchange_ns())
        && ns_exists(&c.trader_ns())
        && check(
            &c.exchange_ns(),
            &c.exchange_if,
            &c.exchange_mac,
            c.exchange_ip,
        )
        && check(&c.trader_ns(), &c.trader_if, &c.trader_mac, c.trader_ip)
        && gateway_pinned(c)
}

/// True when the trader side's neighbour table pins the exchange's MAC.
fn gateway_pinned(c: &LabConfig) -> bool {
    Command::new("ip")
        .args(["-n", &c.trader_ns(), "neigh", "show", "dev", &c.trader_if])
        .arg(c.exchange_ip.to_string())
        .output()
        .is_ok_and(|o| {
            let out = String::from_utf8_lossy(&o.stdout);
            out.contains(&c.exchange_mac.to_string()) && out.contains("PERMANENT")
        })
}

/// True when the exchange side has resolved the trader's address to the trader's MAC (ARP
/// went through whatever XDP program is attached to the trader's end).
pub fn exchange_resolved_trader(config: &LabConfig) -> bool {
    Command::new("ip")
        .args(["-n", &config.exchange_ns(), "neigh", "show"])
        .arg(config.trader_ip.to_string())
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(&config.trader_mac.to_string()))
}

/// The pids of processes running inside the lab's namespaces (`ip netns pids`).
pub fn lab_pids(config: &LabConfig) -> Vec<u32> {
    let mut pids = Vec::new();
    for ns in [config.exchange_ns(), config.trader_ns()] {
        if !ns_exists(&ns) {
            continue;
        }
        if let Ok(out) = Command::new("ip").args(["netns", "pids", &ns]).output() {
            pids.extend(
                String::from_utf8_lossy(&out.stdout)
                    .split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    pids
}

/// Stops every process inside the lab's namespaces (SIGTERM, then SIGKILL after `grace`, the
/// policy [`ChildGuard`] follows too): what a killed benchmark left running, which would
/// otherwise hold the XDP attachment and the ports. Returns how many there were.
pub fn stop_lab_processes(config: &LabConfig, grace: std::time::Duration) -> usize {
    let pids = lab_pids(config);
    for &p in &pids {
        eprintln!("+ kill -TERM {p}  (left running in lab {})", config.name);
    }
    if !child::terminate_within(&pids, grace, || !lab_pids(config).is_empty()) {
        for p in lab_pids(config) {
            eprintln!("+ kill -KILL {p}  (ignored SIGTERM for {grace:?})");
            let _ = signal(p, Signal::SIGKILL);
        }
    }
    pids.len()
}

/// What the lab's privileged tests need: building namespaces and veths, attaching XDP,
/// opening AF_XDP and raw sockets.
pub const TEST_CAPABILITIES: [Capability; 4] = [
    Capability::NetAdmin,
    Capability::SysAdmin,
    Capability::NetRaw,
    Capability::Bpf,
];

/// Set to `require` (CI, `cargo xtask test`) to make a privileged test fail rather than skip
/// when the privileges are missing, so a misconfigured runner can't pass by skipping.
pub const REQUIRE_PRIVILEGED_TESTS_ENV: &str = "T2T_PRIVILEGED_TESTS";

/// For a privileged test's first line: true when this process has [`TEST_CAPABILITIES`];
/// otherwise prints one line saying the test is skipped and why, and returns false, so a
/// plain `cargo test` passes as an ordinary user. With [`REQUIRE_PRIVILEGED_TESTS_ENV`] set to
/// `require` it panics instead.
///
/// The line goes straight to the process's stderr, past the test harness's output capture,
/// so `cargo test` shows it next to the test's name.
pub fn require_privileges_or_skip() -> bool {
    let missing = match check_capabilities(&TEST_CAPABILITIES) {
        Ok(()) => return true,
        Err(Error::MissingPrivilege { missing }) => missing
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join("+"),
        Err(e) => e.to_string(),
    };
    let required = std::env::var(REQUIRE_PRIVILEGED_TESTS_ENV).is_ok_and(|v| v == "require");
    assert!(
        !required,
        "needs {missing}, and {REQUIRE_PRIVILEGED_TESTS_ENV}=require says not to skip"
    );
    let _ = writeln!(
        std::io::stderr(),
        "skipped: needs {missing} (run as root or `cargo xtask test`)"
    );
    false
}

/// True when a namespace of this name exists.
pub fn ns_exists(name: &str) -> bool {
    Path::new(NETNS_RUN_DIR).join(name).exists()
}

/// The names of every namespace whose name starts with [`PREFIX`].
pub fn project_namespaces() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(NETNS_RUN_DIR) else {
        return Vec::new();
    };
    let mut names: Vec<String> = dir
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(PREFIX))
        .collect();
    names.sort();
    names
}

/// A human-readable account of a lab: namespaces, links, addresses, attached XDP programs.
pub fn status(config: &LabConfig) -> Result<String, Error> {
    require_ip()?;
    let mut s = String::new();
    for ns in [config.exchange_ns(), config.trader_ns()] {
        if !ns_exists(&ns) {
            s.push_str(&format!("netns {ns}: absent\n"));
            continue;
        }
        s.push_str(&format!("netns {ns}:\n"));
        // `ip link` shows an attached XDP program as `prog/xdp id N` (with `xdpgeneric` for SKB
        // mode), `-d` adds the veth peer.
        for args in [
            &["-br", "link"][..],
            &["-br", "addr"][..],
            &["-d", "link"][..],
        ] {
            let mut cmd = Command::new("ip");
            cmd.arg("-n").arg(&ns).args(args);
            let out = cmd.output().map_err(|source| Error::Io {
                op: "running ip".into(),
                source,
            })?;
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                let keep = args[0] == "-br" || line.contains("xdp");
                if keep {
                    s.push_str("  ");
                    s.push_str(line.trim_end());
                    s.push('\n');
                }
            }
        }
    }
    let (ex, tr) = (
        ns_exists(&config.exchange_ns()),
        ns_exists(&config.trader_ns()),
    );
    s.push_str(&match (ex, tr) {
        (false, false) => format!("lab {}: down\n", config.name),
        _ if is_intact(config) => format!("lab {}: up\n", config.name),
        _ => format!(
            "lab {}: INCOMPLETE (a namespace, link or address is missing, as a killed run \
             leaves it): `cargo xtask netns-up` rebuilds it, `cargo xtask netns-down` removes it\n",
            config.name
        ),
    });
    Ok(s)
}

fn require_ip() -> Result<(), Error> {
    if which("ip") {
        Ok(())
    } else {
        Err(Error::ToolMissing {
            tool: "ip",
            package: "iproute2",
        })
    }
}

fn which(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(tool).is_file()))
}

fn ip(args: &[&str]) -> Result<Output, Error> {
    let mut cmd = Command::new("ip");
    cmd.args(args);
    run(&mut cmd)
}

struct Shown<'a>(&'a Command);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.get_program().to_string_lossy())?;
        for a in self.0.get_args() {
            write!(f, " {}", a.to_string_lossy())?;
        }
        Ok(())
    }
}

/// Prints the command, runs it, and fails with the command and its stderr in the message.
fn run(cmd: &mut Command) -> Result<Output, Error> {
    let shown = Shown(cmd).to_string();
    eprintln!("+ {shown}");
    let out = cmd.output().map_err(|source| Error::Io {
        op: format!("running `{shown}`"),
        source,
    })?;
    if !out.status.success() {
        return Err(Error::Command {
            command: shown,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_validated() {
        assert!(LabConfig::new("t2t").is_ok());
        assert!(LabConfig::new("t2t-a-123").is_ok());
        for bad in ["", "T2T", "1lab", "a b", "lab/x", &"x".repeat(MAX_NAME + 1)] {
            let err = LabConfig::new(bad).unwrap_err();
            assert!(matches!(err, Error::InvalidName { .. }), "{bad:?}: {err}");
        }
    }

    #[test]
    fn layout_derives_from_name_and_stays_in_the_benchmark_range() {
        let c = LabConfig::new("t2t-x").unwrap();
        assert_eq!(c.exchange_ns(), "t2t-x-ex");
        assert_eq!(c.trader_ns(), "t2t-x-tr");
        let bench: (u32, u32) = (u32::from(Ipv4Addr::new(198, 18, 0, 0)), 15);
        for ip in [c.exchange_ip, c.trader_ip] {
            assert_eq!(
                u32::from(ip) >> (32 - bench.1),
                bench.0 >> (32 - bench.1),
                "{ip}"
            );
        }
        assert_eq!(c.trader_mac.to_string(), "02:00:c6:12:00:02");
        // Locally administered, unicast.
        assert_eq!(c.exchange_mac.0[0] & 0x03, 0x02);
    }
}
