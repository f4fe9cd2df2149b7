//! What the host says about this process and itself: interface MACs (sysfs), memory, context
//! switches, steal and run-queue time (/proc), for the reports.
use anyhow::Context as _;

use netns::Mac;
use results::{ContextSwitches, ThreadTime};

use crate::clock::now_ns;

/// The MAC address of `iface` in this network namespace (sysfs).
pub fn read_mac(iface: &str) -> anyhow::Result<Mac> {
    let path = format!("/sys/class/net/{iface}/address");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("no interface {iface} here ({path}); is the lab up?"))?;
    text.parse()
        .with_context(|| format!("unexpected MAC in {path}"))
}

/// The next hop toward `dst` out of `iface`, and its MAC, from this network namespace's routing
/// and neighbour tables (/proc/net/route, /proc/net/arp), read once at start: what an AF_XDP
/// sender writes into every frame it builds, since no kernel stack is there to resolve it.
/// An error names what is missing and how to fix it: no route, a route out of another
/// interface, or no complete neighbour entry (the lab pins one for the exchange).
pub fn next_hop_mac(
    iface: &str,
    dst: std::net::Ipv4Addr,
) -> anyhow::Result<(std::net::Ipv4Addr, Mac)> {
    let routes = std::fs::read_to_string("/proc/net/route").context("reading /proc/net/route")?;
    let (route_if, hop) = next_hop(&routes, dst).with_context(|| {
        format!("no route to {dst} in this network namespace (`ip route get {dst}` says why)")
    })?;
    anyhow::ensure!(
        route_if == iface,
        "{dst} is reached through {route_if}, not {iface}: orders built on {iface} would go \
         the wrong way (give the gateway an address reached through {iface})"
    );
    let arp = std::fs::read_to_string("/proc/net/arp").context("reading /proc/net/arp")?;
    let mac = neighbour(&arp, iface, hop).with_context(|| {
        format!(
            "no complete neighbour entry for {hop} on {iface} (the next hop to {dst}): its MAC is \
             read from the neighbour table once at start. Pin it (`ip neigh replace {hop} lladdr \
             MAC dev {iface} nud permanent`) or let the kernel resolve it first \
             (`ping -c1 {hop}`)"
        )
    })?;
    Ok((hop, mac))
}

/// The interface and next hop of the longest-prefix route to `dst` in /proc/net/route's text
/// (addresses as the kernel prints them: hex of the network-order bytes read as a native u32).
fn next_hop(routes: &str, dst: std::net::Ipv4Addr) -> Option<(String, std::net::Ipv4Addr)> {
    let hex = |s: &str| u32::from_str_radix(s, 16).ok().map(u32::to_ne_bytes);
    let dst = dst.octets();
    let mut best: Option<(u32, String, std::net::Ipv4Addr)> = None;
    for line in routes.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [iface, dest, gw, flags, .., mask] = f.get(..8)? else {
            continue;
        };
        let (Some(dest), Some(gw), Some(mask)) = (hex(dest), hex(gw), hex(mask)) else {
            continue;
        };
        // RTF_UP.
        if u16::from_str_radix(flags, 16).unwrap_or(0) & 1 == 0 {
            continue;
        }
        if (0..4).any(|i| dst[i] & mask[i] != dest[i]) {
            continue;
        }
        let len = u32::from_be_bytes(mask).count_ones();
        if best.as_ref().is_none_or(|(l, ..)| len > *l) {
            let hop = if gw == [0; 4] { dst } else { gw };
            best = Some((len, (*iface).to_string(), hop.into()));
        }
    }
    best.map(|(_, i, h)| (i, h))
}

/// The MAC of `ip` on `iface` in /proc/net/arp's text, if the entry is complete (ATF_COM).
fn neighbour(arp: &str, iface: &str, ip: std::net::Ipv4Addr) -> Option<Mac> {
    arp.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [addr, _, flags, mac, _, dev] = f.get(..6)? else {
            return None;
        };
        let flags = u32::from_str_radix(flags.trim_start_matches("0x"), 16).ok()?;
        (addr.parse() == Ok(ip) && *dev == iface && flags & 0x2 != 0)
            .then(|| mac.parse().ok())
            .flatten()
    })
}

/// Resident set size of this process in KiB (/proc/self/statm), for "flat memory" checks.
pub fn rss_kib() -> u64 {
    let page_kib = 4;
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * page_kib)
}

/// (voluntary, involuntary) context switches of this process so far (/proc/self/status). A
/// spinning loop should see no voluntary ones; each involuntary one is a preemption, a stall
/// of at least a scheduler slice for whatever was in flight.
pub fn context_switches() -> ContextSwitches {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split(':').nth(1))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    ContextSwitches {
        voluntary: field("voluntary_ctxt_switches"),
        involuntary: field("nonvoluntary_ctxt_switches"),
    }
}

/// The accounting of one span of a measured thread: its context switches and where its wall
/// time went. Start and finish it on the same thread.
#[derive(Debug, Clone, Copy)]
pub struct SpanAccounting {
    switches: ContextSwitches,
    time: ThreadTimeStart,
}

impl SpanAccounting {
    /// Starts the span now.
    pub fn start() -> Self {
        SpanAccounting {
            switches: context_switches(),
            time: ThreadTimeStart::now(),
        }
    }

    /// The span from its start to now. `spinning`: the thread was meant never to sleep; its
    /// unaccounted time is reported as stolen only if it indeed never did (no voluntary
    /// context switch), since a sleep and a steal look the same from inside.
    pub fn finish(&self, spinning: bool) -> (ContextSwitches, ThreadTime) {
        let now = context_switches();
        let switches = ContextSwitches {
            voluntary: now.voluntary.saturating_sub(self.switches.voluntary),
            involuntary: now.involuntary.saturating_sub(self.switches.involuntary),
        };
        let time = self.time.elapsed(spinning && switches.voluntary == 0);
        (switches, time)
    }
}

/// Time the hypervisor gave each CPU's turn to someone else ("steal" in `/proc/stat`), in
/// milliseconds, one entry per CPU; empty where the kernel doesn't say. A spinning process on
/// a virtual CPU cannot see these pauses any other way: they are gaps in its own time line,
/// and they land in the tail of every latency it measures. Resolution: the kernel's USER_HZ
/// (10 ms on x86).
pub fn steal_ms() -> Vec<u64> {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .filter(|&hz| hz > 0)
        .unwrap_or(100) as u64;
    parse_steal(&stat)
        .into_iter()
        .map(|ticks| ticks * 1000 / hz)
        .collect()
}

/// The steal column (the 8th number) of each `cpuN` line.
fn parse_steal(stat: &str) -> Vec<u64> {
    stat.lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .map(|l| {
            l.split_whitespace()
                .nth(8)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        })
        .collect()
}

/// A [`ThreadTime`] starting point.
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadTimeStart {
    wall_ns: u64,
    ran_ns: u64,
    waited_ns: u64,
    minor_faults: u64,
}

impl ThreadTimeStart {
    /// Marks the start (of the calling thread's accounting).
    pub fn now() -> ThreadTimeStart {
        ThreadTimeStart {
            wall_ns: now_ns(),
            ran_ns: thread_cpu_ns(),
            waited_ns: thread_waited_ns(),
            minor_faults: thread_minor_faults(),
        }
    }

    /// What the calling thread did since this start (taken on the same thread); `spinning`: it
    /// never slept meanwhile (no voluntary context switch), so the unaccounted rest is stolen
    /// time.
    pub fn elapsed(self, spinning: bool) -> ThreadTime {
        let s = self;
        let waited = thread_waited_ns().saturating_sub(s.waited_ns);
        let ran = thread_cpu_ns().saturating_sub(s.ran_ns);
        let wall = now_ns().saturating_sub(s.wall_ns);
        let mut t = split_wall(wall, ran, waited);
        t.minor_faults = thread_minor_faults().saturating_sub(s.minor_faults);
        if !spinning {
            t.stolen_ms = None;
        }
        t
    }
}

fn split_wall(wall: u64, ran: u64, waited: u64) -> ThreadTime {
    let ms = |ns: u64| ns as f64 / 1e6;
    ThreadTime {
        wall_ms: ms(wall),
        ran_ms: ms(ran),
        waited_ms: ms(waited),
        stolen_ms: Some(ms(wall.saturating_sub(ran).saturating_sub(waited))),
        minor_faults: 0,
    }
}

/// Minor page faults of the calling thread so far (0 where getrusage can't say).
pub fn thread_minor_faults() -> u64 {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_THREAD).map_or(0, |u| u.minor_page_faults() as u64)
}

/// The calling thread's CPU time, ns. Exact when read: unlike schedstat's first field, which
/// the scheduler brings up to date only at its tick (up to 4 ms behind at HZ=250), the clock
/// adds the running slice in.
fn thread_cpu_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|ts| crate::clock::ns(&ts))
        .unwrap_or(0)
}

/// The calling thread's time runnable on a run queue but not running, ns; 0 if unreadable.
/// Up to date while the thread runs: the scheduler adds each wait when the thread gets a CPU.
fn thread_waited_ns() -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    parse_schedstat(&text).1
}

fn parse_schedstat(text: &str) -> (u64, u64) {
    let mut f = text.split_whitespace().map(|v| v.parse().unwrap_or(0));
    (f.next().unwrap_or(0), f.next().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_span_counts_the_pages_it_first_touches() {
        let start = super::ThreadTimeStart::now();
        // 4 MiB, written a byte per page: every page is new to the process in this span.
        let mut v = vec![0u8; 4 << 20];
        for i in (0..v.len()).step_by(4096) {
            v[i] = 1;
        }
        let t = start.elapsed(false);
        std::hint::black_box(&v);
        // At least one fault per 2 MiB (THP) and at most a few per 4 KiB page.
        assert!(t.minor_faults >= 2, "{t:?}");
        // Touching the same pages again costs none.
        let again = super::ThreadTimeStart::now();
        for i in (0..v.len()).step_by(4096) {
            v[i] = 2;
        }
        std::hint::black_box(&v);
        assert_eq!(again.elapsed(false).minor_faults, 0);
    }

    #[test]
    fn steal_is_the_eighth_number_of_each_cpu_line() {
        let stat = "cpu  172862 0 27530 111848 1178 0 551 862 0 0\n\
                    cpu0 81940 0 13464 60834 356 0 374 419 0 0\n\
                    cpu1 90921 0 14065 51014 822 0 177 443 0 0\n\
                    intr 1 2 3\n";
        assert_eq!(super::parse_steal(stat), vec![419, 443]);
        assert_eq!(
            super::parse_steal("cpu0 1 2 3\n"),
            vec![0],
            "old kernels: no column"
        );
    }

    #[test]
    fn wall_time_splits_into_ran_waited_and_stolen() {
        assert_eq!(
            super::parse_schedstat("4992563005 1066147 311\n"),
            (4992563005, 1066147)
        );
        assert_eq!(super::parse_schedstat(""), (0, 0));
        let t = super::split_wall(5_001_000_000, 4_992_000_000, 1_000_000);
        assert_eq!((t.wall_ms, t.ran_ms, t.waited_ms), (5001.0, 4992.0, 1.0));
        assert_eq!(t.stolen_ms, Some(8.0));
        // Clocks read a moment apart can disagree by a little: never negative.
        assert_eq!(super::split_wall(10, 11, 0).stolen_ms, Some(0.0));
    }

    #[test]
    fn a_spinning_thread_is_seen_running() {
        let start = super::ThreadTimeStart::now();
        let t0 = std::time::Instant::now();
        while t0.elapsed() < std::time::Duration::from_millis(50) {
            std::hint::spin_loop();
        }
        let t = start.elapsed(true);
        assert!(t.wall_ms >= 50.0, "{t:?}");
        assert!(t.stolen_ms.is_some());
        assert_eq!(start.elapsed(false).stolen_ms, None);
        // The kernel saw us run, and for no longer than the wall clock allows (give or take
        // the wall clock's NTP slew, at most 500 ppm).
        assert!(t.ran_ms > 0.0 && t.ran_ms <= t.wall_ms * 1.001, "{t:?}");
    }
}

#[cfg(test)]
mod next_hop_tests {
    use std::net::Ipv4Addr;

    use super::*;

    const ROUTES: &str =
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
tr0\t000012C6\t00000000\t0001\t0\t0\t0\tFCFFFFFF\t0\t0\t0
eth0\t00000000\t010012C6\t0003\t0\t0\t0\t00000000\t0\t0\t0
down0\t090012C6\t00000000\t0000\t0\t0\t0\tFFFFFFFF\t0\t0\t0
";
    const ARP: &str =
        "IP address       HW type     Flags       HW address            Mask     Device
198.18.0.1       0x1         0x6         02:00:c6:12:00:01     *        tr0
198.18.0.5       0x1         0x0         00:00:00:00:00:00     *        tr0
198.18.0.1       0x1         0x2         02:00:00:00:00:99     *        other
";

    #[test]
    fn the_longest_prefix_names_the_next_hop() {
        let on_link = next_hop(ROUTES, Ipv4Addr::new(198, 18, 0, 1)).unwrap();
        assert_eq!(on_link, ("tr0".into(), Ipv4Addr::new(198, 18, 0, 1)));
        // Off-link: the default route's gateway, out of eth0.
        let far = next_hop(ROUTES, Ipv4Addr::new(198, 19, 0, 1)).unwrap();
        assert_eq!(far, ("eth0".into(), Ipv4Addr::new(198, 18, 0, 1)));
        // A route that isn't up is no route (the /32 would win otherwise).
        let down = next_hop(ROUTES, Ipv4Addr::new(198, 18, 0, 9)).unwrap();
        assert_eq!(down.0, "eth0");
        assert_eq!(next_hop("Iface\n", Ipv4Addr::new(1, 2, 3, 4)), None);
    }

    #[test]
    fn only_a_complete_entry_on_the_interface_gives_a_mac() {
        let mac = neighbour(ARP, "tr0", Ipv4Addr::new(198, 18, 0, 1)).unwrap();
        assert_eq!(mac.to_string(), "02:00:c6:12:00:01");
        assert_eq!(
            neighbour(ARP, "tr0", Ipv4Addr::new(198, 18, 0, 5)),
            None,
            "incomplete"
        );
        assert_eq!(
            neighbour(ARP, "tr0", Ipv4Addr::new(198, 18, 0, 7)),
            None,
            "absent"
        );
        assert_eq!(
            neighbour(ARP, "other", Ipv4Addr::new(198, 18, 0, 1)).map(|m| m.to_string()),
            Some("02:00:00:00:00:99".into()),
            "per interface"
        );
    }
}
