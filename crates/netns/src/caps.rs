//! Privilege checks that name what is missing, before anything is changed.
use std::fmt;

use crate::Error;

/// Linux capabilities the lab and the XDP path need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capability {
    /// Creating links, addresses, attaching XDP.
    NetAdmin,
    /// Raw and AF_XDP sockets.
    NetRaw,
    /// Creating and entering network namespaces (`setns`, `ip netns add`).
    SysAdmin,
    /// Loading BPF programs and maps.
    Bpf,
}

impl Capability {
    /// The capability's number (linux/capability.h).
    pub const fn number(self) -> u32 {
        match self {
            Capability::NetAdmin => 12,
            Capability::NetRaw => 13,
            Capability::SysAdmin => 21,
            Capability::Bpf => 39,
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Capability::NetAdmin => "CAP_NET_ADMIN",
            Capability::NetRaw => "CAP_NET_RAW",
            Capability::SysAdmin => "CAP_SYS_ADMIN",
            Capability::Bpf => "CAP_BPF",
        })
    }
}

/// Fails with [`Error::MissingPrivilege`] naming each capability in `needed` that is not in
/// the process's effective set. `CAP_SYS_ADMIN` stands in for `CAP_BPF`, as in the kernel.
pub fn check_capabilities(needed: &[Capability]) -> Result<(), Error> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|source| Error::Io {
        op: "reading /proc/self/status".into(),
        source,
    })?;
    let effective = parse_cap_eff(&status).unwrap_or(0);
    let has = |c: Capability| effective & (1u64 << c.number()) != 0;
    let missing: Vec<Capability> = needed
        .iter()
        .copied()
        .filter(|&c| !(has(c) || (c == Capability::Bpf && has(Capability::SysAdmin))))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Error::MissingPrivilege { missing })
    }
}

fn parse_cap_eff(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_effective_set() {
        let status = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        assert_eq!(parse_cap_eff(status), Some(0x1ff_ffff_ffff));
        assert_eq!(parse_cap_eff("Name: x\n"), None);
    }

    #[test]
    fn missing_capabilities_are_named() {
        let e = Error::MissingPrivilege {
            missing: vec![Capability::NetAdmin, Capability::Bpf],
        };
        let msg = e.to_string();
        assert!(
            msg.contains("CAP_NET_ADMIN") && msg.contains("CAP_BPF"),
            "{msg}"
        );
    }
}
