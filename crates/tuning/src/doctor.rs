//! Is this machine set up for low latency? Each [`Finding`] says what was found, why it matters
//! on the hot path and what to set. Everything is read from files under a root (`/` on the
//! machine, a fixture folder in tests), so every parser is tested on fixtures.

use std::path::{Path, PathBuf};

use serde::Serialize;

/// How a finding stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Set as a latency-critical machine would be.
    Good,
    /// Costs latency (usually the tail); the fix says what to set.
    Warn,
    /// Worth knowing; nothing to set, or nothing a guest can set.
    Info,
}

/// One line of the doctor's report.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub topic: &'static str,
    pub status: Status,
    pub found: String,
    pub why: &'static str,
    pub fix: String,
}

impl Finding {
    /// One line for a report's conditions: `[warn] THP: madvise`.
    pub fn summary(&self) -> String {
        let tag = match self.status {
            Status::Good => "ok",
            Status::Warn => "warn",
            Status::Info => "info",
        };
        format!("[{tag}] {}: {}", self.topic, self.found)
    }
}

/// Where the files are read from.
#[derive(Debug, Clone)]
pub struct Machine {
    root: PathBuf,
}

impl Machine {
    /// The machine this runs on.
    pub fn live() -> Machine {
        Machine { root: "/".into() }
    }

    /// A fixture tree laid out like `/` (proc/cmdline, sys/..., ...).
    pub fn at(root: impl Into<PathBuf>) -> Machine {
        Machine { root: root.into() }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.root.join(p.trim_start_matches('/'))
    }

    fn read(&self, p: &str) -> Option<String> {
        std::fs::read_to_string(self.path(p))
            .ok()
            .map(|s| s.trim().to_string())
    }

    fn list(&self, p: &str) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.path(p))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort_by_key(|a| natural(a));
        v
    }
}

/// Sort key: numbers by value (`irq/9` before `irq/10`), names after.
fn natural(s: &str) -> (u64, String) {
    (s.parse().unwrap_or(u64::MAX), s.to_string())
}

/// A CPU list as the kernel writes it (`0-3,8,10-11`) into CPU numbers; `None` if malformed.
pub fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let s = s.trim();
    if s.is_empty() {
        return Some(Vec::new());
    }
    let mut v = Vec::new();
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if b < a {
                    return None;
                }
                v.extend(a..=b);
            }
            None => v.push(part.trim().parse().ok()?),
        }
    }
    Some(v)
}

/// The value of `key=` on a kernel command line, or `Some("")` for a bare `key`.
pub fn cmdline_value<'a>(cmdline: &'a str, key: &str) -> Option<&'a str> {
    // Everything after `--` goes to init, not to the kernel.
    let kernel = cmdline.split(" -- ").next().unwrap_or(cmdline);
    kernel
        .split_whitespace()
        .find_map(|w| match w.split_once('=') {
            Some((k, v)) if k == key => Some(v),
            None if w == key => Some(""),
            _ => None,
        })
}

/// The bracketed choice of a sysfs multiple-choice file (`always [madvise] never`).
pub fn bracketed(s: &str) -> Option<&str> {
    let a = s.find('[')?;
    let b = s[a..].find(']')?;
    Some(&s[a + 1..a + b])
}

/// Steal time as a share of all CPU time since boot, from /proc/stat's `cpu` line.
pub fn steal_share(proc_stat: &str) -> Option<f64> {
    let line = proc_stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal guest guest_nice; guest is inside user.
    let total: u64 = v.iter().take(8).sum();
    let steal = *v.get(7)?;
    (total > 0).then(|| steal as f64 / total as f64)
}

/// Per-IRQ rows of /proc/interrupts that fired on `cpu`: (irq, count on cpu, name).
pub fn irqs_on_cpu(interrupts: &str, cpu: usize) -> Vec<(String, u64, String)> {
    let mut lines = interrupts.lines();
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let ncpu = header.split_whitespace().count();
    lines
        .filter_map(|l| {
            let (irq, rest) = l.trim_start().split_once(':')?;
            // Numbered device IRQs only; LOC, RES and friends are per-CPU by nature.
            irq.parse::<u32>().ok()?;
            let mut f = rest.split_whitespace();
            let counts: Vec<u64> = (0..ncpu).map_while(|_| f.next()?.parse().ok()).collect();
            let name = f.collect::<Vec<_>>().join(" ");
            let n = *counts.get(cpu)?;
            (n > 0).then(|| (irq.to_string(), n, name))
        })
        .collect()
}

/// Reads every finding. `cpu` is the CPU the trader is pinned to (the latency-critical one).
pub fn check(m: &Machine, cpu: usize) -> Vec<Finding> {
    let mut out = Vec::new();
    for section in [
        cpus_and_isolation,
        mitigations,
        memory,
        power,
        clock,
        scheduling,
        platform,
    ] {
        section(m, cpu, &mut out);
    }
    out
}

/// Findings on the online CPUs, and whether isolcpus, nohz_full and rcu_nocbs cover the trader's.
fn cpus_and_isolation(m: &Machine, cpu: usize, out: &mut Vec<Finding>) {
    let cmdline = m.read("proc/cmdline").unwrap_or_default();
    let cpus = m
        .read("sys/devices/system/cpu/online")
        .and_then(|s| parse_cpu_list(&s))
        .unwrap_or_default();
    out.push(Finding {
        topic: "CPUs",
        status: if cpus.len() > 2 { Status::Info } else { Status::Warn },
        found: format!("{} online ({})", cpus.len(), m.read("sys/devices/system/cpu/online").unwrap_or_default()),
        why: "a latency-critical thread wants a CPU of its own, and the kernel's housekeeping others",
        fix: if cpus.len() > 2 {
            String::new()
        } else {
            "with 2 CPUs, isolating one leaves every other task on the other: expect the replay/exchange side to slow down".into()
        },
    });
    for (key, why, fix) in [
        (
            "isolcpus",
            "keeps the scheduler from placing other tasks on the trader's CPU (boot-time only)",
            "boot with isolcpus=managed_irq,domain,<cpu>",
        ),
        (
            "nohz_full",
            "stops the scheduler tick on a CPU running one task: no 1-4 ms timer interrupts in the loop",
            "boot with nohz_full=<cpu> (needs CONFIG_NO_HZ_FULL)",
        ),
        (
            "rcu_nocbs",
            "moves RCU callbacks off the CPU: no callback storms in the tail",
            "boot with rcu_nocbs=<cpu>",
        ),
    ] {
        let v = cmdline_value(&cmdline, key);
        let covers = v
            .map(|v| {
                v.rsplit(',')
                    .filter_map(parse_cpu_list)
                    .flatten()
                    .any(|c| c == cpu)
            })
            .unwrap_or(false);
        out.push(Finding {
            topic: key,
            status: if covers { Status::Good } else { Status::Warn },
            found: match v {
                Some(v) => format!(
                    "{key}={v}{}",
                    if covers {
                        ""
                    } else {
                        " (not the trader's CPU)"
                    }
                ),
                None => "not set".into(),
            },
            why,
            fix: if covers {
                String::new()
            } else {
                fix.replace("<cpu>", &cpu.to_string())
            },
        });
    }
}

/// Findings on the speculation mitigations the kernel runs.
fn mitigations(m: &Machine, _cpu: usize, out: &mut Vec<Finding>) {
    let cmdline = m.read("proc/cmdline").unwrap_or_default();
    let mitigations = cmdline_value(&cmdline, "mitigations").unwrap_or("auto (default)");
    let vulns: Vec<String> = m
        .list("sys/devices/system/cpu/vulnerabilities")
        .into_iter()
        .filter_map(|f| {
            let v = m.read(&format!("sys/devices/system/cpu/vulnerabilities/{f}"))?;
            v.starts_with("Mitigation").then_some(f)
        })
        .collect();
    out.push(Finding {
        topic: "mitigations",
        status: Status::Info,
        found: format!("mitigations={mitigations}; active: {}", if vulns.is_empty() { "none".to_string() } else { vulns.join(", ") }),
        why: "speculation mitigations make syscalls and context switches dearer (the UDP path pays per packet, AF_XDP less)",
        fix: "mitigations=off trades security for cheaper kernel entries; the study does not recommend it in general".into(),
    });
}

/// Findings on transparent huge pages and reserved HugeTLB pages.
fn memory(m: &Machine, _cpu: usize, out: &mut Vec<Finding>) {
    let thp = m
        .read("sys/kernel/mm/transparent_hugepage/enabled")
        .and_then(|s| bracketed(&s).map(str::to_string))
        .unwrap_or_else(|| "unknown".into());
    let defrag = m
        .read("sys/kernel/mm/transparent_hugepage/defrag")
        .and_then(|s| bracketed(&s).map(str::to_string))
        .unwrap_or_else(|| "unknown".into());
    out.push(Finding {
        topic: "THP",
        status: if thp == "always" { Status::Warn } else { Status::Good },
        found: format!("enabled={thp}, defrag={defrag}"),
        why: "THP `always` can stall a fault for compaction or collapse (ms spikes); `madvise` lets the program choose",
        fix: if thp == "always" { "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled".into() } else { String::new() },
    });
    let hp = m
        .read("proc/sys/vm/nr_hugepages")
        .unwrap_or_else(|| "?".into());
    out.push(Finding {
        topic: "huge pages",
        status: Status::Info,
        found: format!("{hp} x 2 MiB HugeTLB pages reserved"),
        why: "explicit huge pages give UMEM and the hot data few TLB entries, and can't be split or collapsed",
        fix: "reserve at boot (hugepages=N) or before the run (vm.nr_hugepages); the hotpath suite reserves and restores its own".into(),
    });
}

/// Findings on the trader CPU's C-states and frequency governor.
fn power(m: &Machine, cpu: usize, out: &mut Vec<Finding>) {
    let idle_driver = m
        .read("sys/devices/system/cpu/cpuidle/current_driver")
        .filter(|d| d != "none");
    let states: Vec<String> = m
        .list(&format!("sys/devices/system/cpu/cpu{cpu}/cpuidle"))
        .into_iter()
        .filter(|s| s.starts_with("state"))
        .filter_map(|s| {
            let base = format!("sys/devices/system/cpu/cpu{cpu}/cpuidle/{s}");
            let name = m.read(&format!("{base}/name"))?;
            let lat = m.read(&format!("{base}/latency")).unwrap_or_default();
            let off = m.read(&format!("{base}/disable")).is_some_and(|d| d == "1");
            Some(format!(
                "{name} ({lat} µs{})",
                if off { ", disabled" } else { "" }
            ))
        })
        .collect();
    // A KVM guest's haltpoll driver polls this long before it halts (a VM exit).
    let poll_window = m
        .read("sys/module/haltpoll/parameters/guest_halt_poll_ns")
        .map(|ns| {
            format!("; haltpoll polls up to {ns} ns before halting (guest_halt_poll_ns, writable)")
        })
        .unwrap_or_default();
    out.push(Finding {
        topic: "C-states",
        status: Status::Info,
        found: match (&idle_driver, states.is_empty()) {
            (Some(d), false) => format!("driver {d}: {}{poll_window}", states.join(", ")),
            (Some(d), true) => format!("driver {d}, no states listed{poll_window}"),
            (None, _) => "no cpuidle driver (a guest idles through the hypervisor: HLT exits)".into(),
        },
        why: "waking from a deep C-state costs µs to 100s of µs (in a guest, a halt is a VM exit): a sleeping trader pays it per packet",
        fix: "spin (the trader's default), or limit C-states (processor.max_cstate=1, idle=poll, or /dev/cpu_dma_latency); in a guest, haltpoll's poll window or a PM QoS request for 0 µs on /dev/cpu_dma_latency (the halt state's disable switch is ignored by the haltpoll governor here; `cargo xtask hotpath --only cstates` measures both)".into(),
    });
    let gov = m.read(&format!(
        "sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"
    ));
    out.push(Finding {
        topic: "frequency",
        status: match gov.as_deref() {
            Some("performance") => Status::Good,
            Some(_) => Status::Warn,
            None => Status::Info,
        },
        found: gov.clone().map_or_else(
            || "no cpufreq (a guest: the host sets the clock)".into(),
            |g| format!("governor {g}"),
        ),
        why: "a ramping clock makes the first packets after idle slower",
        fix: match gov.as_deref() {
            Some("performance") | None => String::new(),
            Some(_) => format!(
                "echo performance > /sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"
            ),
        },
    });
}

/// Findings on the clocksource and the hypervisor's steal.
fn clock(m: &Machine, _cpu: usize, out: &mut Vec<Finding>) {
    let cs = m
        .read("sys/devices/system/clocksource/clocksource0/current_clocksource")
        .unwrap_or_else(|| "?".into());
    let flags = m
        .read("proc/cpuinfo")
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("flags"))
                .map(str::to_string)
        })
        .unwrap_or_default();
    let invariant = ["constant_tsc", "nonstop_tsc"]
        .iter()
        .all(|f| flags.split_whitespace().any(|x| x == *f));
    out.push(Finding {
        topic: "clocksource",
        status: if cs == "tsc" && invariant { Status::Good } else { Status::Warn },
        found: format!("{cs}{}", if invariant { ", invariant TSC (constant_tsc nonstop_tsc)" } else { ", TSC not invariant" }),
        why: "clock_gettime through the vDSO on the TSC costs ~20 ns; other clocksources (kvm-clock, hpet) can cost a syscall",
        fix: if cs == "tsc" { String::new() } else { "clocksource=tsc tsc=reliable on a host with an invariant TSC".into() },
    });
    let steal = m.read("proc/stat").and_then(|s| steal_share(&s));
    out.push(Finding {
        topic: "hypervisor steal",
        status: match steal {
            Some(s) if s > 0.01 => Status::Warn,
            Some(_) => Status::Good,
            None => Status::Info,
        },
        found: steal.map_or_else(|| "unknown".into(), |s| format!("{:.2} % of CPU time since boot", s * 100.0)),
        why: "time the host ran something else on our vCPU: invisible to the guest's scheduler, it lands in the tail",
        fix: "dedicated (pinned) vCPUs on the host, or bare metal".into(),
    });
}

/// Findings on RT throttling, IRQs, unbound workqueues, the watchdog and timer migration on the trader's CPU.
fn scheduling(m: &Machine, cpu: usize, out: &mut Vec<Finding>) {
    let rt = m.read("proc/sys/kernel/sched_rt_runtime_us");
    let period = m.read("proc/sys/kernel/sched_rt_period_us");
    out.push(Finding {
        topic: "RT throttling",
        status: Status::Info,
        found: match (&rt, &period) {
            (Some(r), Some(p)) if r == "-1" => format!("off (runtime -1 of {p} µs)"),
            (Some(r), Some(p)) => format!("SCHED_FIFO may run {r} of every {p} µs"),
            _ => "unknown".into(),
        },
        why: "a SCHED_FIFO thread that spins starves the CPU's kernel threads until the throttle stops it for the rest of the period",
        fix: "sleep under SCHED_FIFO, spin under SCHED_OTHER (the trader's default); never turn the throttle off with a spinning FIFO thread".into(),
    });
    let irq_files = m.list("proc/irq");
    let mut on_cpu = Vec::new();
    for irq in irq_files.iter().filter(|f| f.parse::<u32>().is_ok()) {
        let eff = m
            .read(&format!("proc/irq/{irq}/effective_affinity_list"))
            .or_else(|| m.read(&format!("proc/irq/{irq}/smp_affinity_list")));
        if let Some(list) = eff.and_then(|s| parse_cpu_list(&s))
            && list.contains(&cpu)
        {
            on_cpu.push(irq.clone());
        }
    }
    let fired: Vec<String> = m
        .read("proc/interrupts")
        .map(|t| irqs_on_cpu(&t, cpu))
        .unwrap_or_default()
        .into_iter()
        .map(|(irq, n, name)| format!("{irq} {name} ({n})"))
        .collect();
    out.push(Finding {
        topic: "IRQ affinity",
        status: if on_cpu.is_empty() { Status::Good } else { Status::Warn },
        found: format!(
            "{} of {} IRQs may land on CPU {cpu}; fired there since boot: {}",
            on_cpu.len(),
            irq_files.iter().filter(|f| f.parse::<u32>().is_ok()).count(),
            if fired.is_empty() { "none".into() } else { fired.join(", ") }
        ),
        why: "a device interrupt on the trader's CPU preempts the loop for its handler and softirq: tail, not median",
        fix: if on_cpu.is_empty() { String::new() } else { "write the other CPUs to /proc/irq/*/smp_affinity_list (`cargo xtask bench --isolate` does, and restores); irqbalance off".to_string() },
    });
    let wq = m.read("sys/devices/virtual/workqueue/cpumask");
    let wq_cpus: Option<Vec<usize>> = wq
        .as_deref()
        .and_then(|s| u64::from_str_radix(s.replace(',', "").trim(), 16).ok())
        .map(|mask| (0..64).filter(|b| mask >> b & 1 == 1).collect());
    out.push(Finding {
        topic: "workqueues",
        status: match &wq_cpus {
            Some(c) if c.contains(&cpu) => Status::Warn,
            Some(_) => Status::Good,
            None => Status::Info,
        },
        found: wq.clone().map_or_else(|| "no /sys/devices/virtual/workqueue/cpumask".into(), |w| format!("unbound workqueue cpumask {w}")),
        why: "unbound kernel work (writeback, crypto, ...) scheduled on the trader's CPU preempts it",
        fix: "write a mask without the trader's CPU to /sys/devices/virtual/workqueue/cpumask (--isolate does, and restores)".into(),
    });
    for (key, why) in [
        (
            "proc/sys/kernel/watchdog",
            "the soft-lockup watchdog wakes a thread on every CPU every few seconds",
        ),
        (
            "proc/sys/kernel/timer_migration",
            "timer migration moves timers between CPUs; 0 keeps other CPUs' timers off the trader's",
        ),
    ] {
        if let Some(v) = m.read(key) {
            out.push(Finding {
                topic: if key.ends_with("watchdog") {
                    "watchdog"
                } else {
                    "timer migration"
                },
                status: if v == "0" { Status::Good } else { Status::Info },
                found: format!(
                    "{} = {v}",
                    key.trim_start_matches("proc/sys/").replace('/', ".")
                ),
                why,
                fix: if v == "0" {
                    String::new()
                } else {
                    format!(
                        "sysctl {}=0 on a dedicated trading box",
                        key.trim_start_matches("proc/sys/").replace('/', ".")
                    )
                },
            });
        }
    }
}

/// Findings on NUMA nodes, and the kernel's XDP and BPF JIT.
fn platform(m: &Machine, _cpu: usize, out: &mut Vec<Finding>) {
    let nodes = m
        .list("sys/devices/system/node")
        .into_iter()
        .filter(|n| n.starts_with("node"))
        .count();
    out.push(Finding {
        topic: "NUMA",
        status: Status::Info,
        found: format!("{nodes} node(s)"),
        why: "memory on the other socket's node costs ~1.5-2x a local access; the NIC sits on one node",
        fix: if nodes > 1 { "pin the trader and its memory (numactl --membind) to the NIC's node".into() } else { String::new() },
    });
    let release = m
        .read("proc/sys/kernel/osrelease")
        .unwrap_or_else(|| "?".into());
    let (major, minor) = release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|x| x.parse::<u32>().ok())
        .take(2)
        .fold((0, 0), |(a, _), x| if a == 0 { (x, 0) } else { (a, x) });
    let xdp_ok = (major, minor) >= (5, 11);
    let jit = m.read("proc/sys/net/core/bpf_jit_enable");
    out.push(Finding {
        topic: "XDP/AF_XDP",
        status: if xdp_ok && jit.as_deref() != Some("0") {
            Status::Good
        } else {
            Status::Warn
        },
        found: format!(
            "kernel {release}{}; BPF JIT {}",
            if xdp_ok {
                " (AF_XDP with need_wakeup, busy poll, multi-buffer)"
            } else {
                " (older than 5.11: no SO_PREFER_BUSY_POLL)"
            },
            match jit.as_deref() {
                Some("0") => "off",
                Some(_) => "on",
                None => "unknown",
            }
        ),
        why: "the lab's fast path is an XDP program redirecting to an AF_XDP socket",
        fix: if jit.as_deref() == Some("0") {
            "sysctl net.core.bpf_jit_enable=1".into()
        } else {
            String::new()
        },
    });
    busy_polling(m, out);
}

/// The global busy-polling sysctls (not per namespace), which per-socket `SO_BUSY_POLL`
/// overrides for its socket. Busy polling polls a NAPI instance; on veth a socket's feed
/// comes from none (`SO_INCOMING_NAPI_ID` reads 0: the trader's report says it per run), so
/// there it polls nothing.
fn busy_polling(m: &Machine, out: &mut Vec<Finding>) {
    let poll = m.read("proc/sys/net/core/busy_poll");
    let read = m.read("proc/sys/net/core/busy_read");
    if poll.is_none() && read.is_none() {
        return;
    }
    let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
    out.push(Finding {
        topic: "busy polling",
        status: Status::Info,
        found: format!(
            "net.core.busy_poll = {} µs, net.core.busy_read = {} µs (global, not per namespace)",
            show(&poll),
            show(&read)
        ),
        why: "busy polling spins on the NIC queue's NAPI instead of waiting for its interrupt; \
              it needs a NAPI behind the socket (the trader reports SO_INCOMING_NAPI_ID: 0 on veth)",
        fix: String::new(),
    });
}

/// The findings as text, one block each.
pub fn render(findings: &[Finding]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    for f in findings {
        let _ = writeln!(s, "{}", f.summary());
        let _ = writeln!(s, "       why: {}", f.why);
        if !f.fix.is_empty() {
            let _ = writeln!(s, "       fix: {}", f.fix);
        }
    }
    s
}

/// True if `path` (under the machine's root) exists: for callers that need one more fact.
pub fn exists(m: &Machine, path: &str) -> bool {
    Path::new(&m.path(path)).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_as_the_kernel_writes_them() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("1"), Some(vec![1]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn the_command_line_is_read_up_to_inits_arguments() {
        let c =
            "quiet isolcpus=managed_irq,domain,1 nohz_full=1-3 mitigations=off -- --nohz_full=9";
        assert_eq!(cmdline_value(c, "isolcpus"), Some("managed_irq,domain,1"));
        assert_eq!(cmdline_value(c, "nohz_full"), Some("1-3"));
        assert_eq!(cmdline_value(c, "quiet"), Some(""));
        assert_eq!(cmdline_value(c, "rcu_nocbs"), None);
        assert_eq!(bracketed("always [madvise] never"), Some("madvise"));
    }

    #[test]
    fn steal_and_irqs_come_from_proc() {
        let stat = "cpu  100 0 50 800 10 5 5 30 0 0\ncpu0 1 2 3\n";
        let s = steal_share(stat).unwrap();
        assert!((s - 30.0 / 1000.0).abs() < 1e-9, "{s}");
        let ints = "           CPU0       CPU1       \n 36:          0      34444 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n 39:       3675          0 PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0\nLOC:      42777      45926   Local timer interrupts\n";
        let on1 = irqs_on_cpu(ints, 1);
        assert_eq!(on1.len(), 1);
        assert_eq!(on1[0].0, "36");
        assert_eq!(on1[0].1, 34444);
        assert!(on1[0].2.ends_with("virtio1-req.0"));
    }

    /// A fixture machine: a VM like this project's, as files.
    fn fixture(isolated: bool) -> (tempfile::TempDir, Machine) {
        let d = tempfile::tempdir().unwrap();
        let w = |p: &str, s: &str| {
            let p = d.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, s).unwrap();
        };
        w(
            "proc/cmdline",
            if isolated {
                "quiet isolcpus=1 nohz_full=1 rcu_nocbs=1"
            } else {
                "mitigations=auto console=ttyS0 -- --isolcpus=1"
            },
        );
        w("sys/devices/system/cpu/online", "0-1\n");
        w(
            "sys/kernel/mm/transparent_hugepage/enabled",
            "always madvise [never]\n",
        );
        w(
            "sys/kernel/mm/transparent_hugepage/defrag",
            "[madvise] never\n",
        );
        w("proc/sys/vm/nr_hugepages", "0\n");
        w(
            "sys/devices/system/clocksource/clocksource0/current_clocksource",
            "tsc\n",
        );
        w(
            "proc/cpuinfo",
            "processor\t: 0\nflags\t\t: fpu constant_tsc nonstop_tsc avx2\n",
        );
        w("proc/stat", "cpu  100 0 50 800 10 5 5 30 0 0\n");
        w("proc/sys/kernel/sched_rt_runtime_us", "950000\n");
        w("proc/sys/kernel/sched_rt_period_us", "1000000\n");
        w("proc/irq/36/smp_affinity_list", "0-1\n");
        w(
            "proc/irq/36/effective_affinity_list",
            if isolated { "0\n" } else { "1\n" },
        );
        w("proc/irq/39/smp_affinity_list", "0-1\n");
        w("proc/irq/39/effective_affinity_list", "0\n");
        w(
            "sys/devices/virtual/workqueue/cpumask",
            if isolated { "1\n" } else { "3\n" },
        );
        w(
            "sys/devices/system/cpu/vulnerabilities/spectre_v2",
            "Mitigation: Retpolines\n",
        );
        w(
            "sys/devices/system/cpu/vulnerabilities/meltdown",
            "Not affected\n",
        );
        w("proc/sys/kernel/osrelease", "6.18.44-fc\n");
        w("proc/sys/net/core/busy_poll", "0\n");
        w("proc/sys/net/core/busy_read", "50\n");
        let m = Machine::at(d.path());
        (d, m)
    }

    fn find<'a>(f: &'a [Finding], topic: &str) -> &'a Finding {
        f.iter()
            .find(|x| x.topic == topic)
            .unwrap_or_else(|| panic!("no finding {topic}: {f:?}"))
    }

    #[test]
    fn a_vm_without_boot_isolation_gets_warnings_with_fixes() {
        let (_d, m) = fixture(false);
        let f = check(&m, 1);
        let iso = find(&f, "isolcpus");
        assert_eq!(iso.status, Status::Warn);
        // Arguments after `--` belong to init, not the kernel.
        assert_eq!(iso.found, "not set");
        assert!(
            iso.fix.contains("isolcpus=managed_irq,domain,1"),
            "{}",
            iso.fix
        );
        assert_eq!(find(&f, "IRQ affinity").status, Status::Warn);
        assert!(
            find(&f, "IRQ affinity").found.starts_with("1 of 2 IRQs"),
            "{:?}",
            find(&f, "IRQ affinity")
        );
        assert_eq!(find(&f, "workqueues").status, Status::Warn);
        assert_eq!(find(&f, "THP").status, Status::Good);
        assert_eq!(find(&f, "THP").found, "enabled=never, defrag=madvise");
        assert_eq!(find(&f, "clocksource").status, Status::Good);
        assert!(
            find(&f, "mitigations").found.contains("active: spectre_v2"),
            "{:?}",
            find(&f, "mitigations")
        );
        assert_eq!(find(&f, "hypervisor steal").status, Status::Warn);
        assert!(
            find(&f, "RT throttling")
                .found
                .contains("950000 of every 1000000")
        );
        assert_eq!(find(&f, "XDP/AF_XDP").status, Status::Good);
        assert!(find(&f, "C-states").found.starts_with("no cpuidle driver"));
        assert!(find(&f, "frequency").found.starts_with("no cpufreq"));
    }

    #[test]
    fn a_haltpoll_guest_shows_its_states_and_poll_window() {
        let (d, _) = fixture(false);
        let w = |p: &str, s: &str| {
            let p = d.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, s).unwrap();
        };
        w(
            "sys/devices/system/cpu/cpuidle/current_driver",
            "haltpoll\n",
        );
        for (i, name, lat) in [(0, "POLL", "0"), (1, "haltpoll idle", "1")] {
            let base = format!("sys/devices/system/cpu/cpu1/cpuidle/state{i}");
            w(&format!("{base}/name"), &format!("{name}\n"));
            w(&format!("{base}/latency"), &format!("{lat}\n"));
            w(&format!("{base}/disable"), "0\n");
        }
        w("sys/module/haltpoll/parameters/guest_halt_poll_ns", "0\n");
        let f = check(&Machine::at(d.path()), 1);
        assert_eq!(
            find(&f, "C-states").found,
            "driver haltpoll: POLL (0 µs), haltpoll idle (1 µs); haltpoll polls up to 0 ns \
             before halting (guest_halt_poll_ns, writable)"
        );
    }

    #[test]
    fn the_busy_polling_sysctls_are_read_as_they_are() {
        let (_d, m) = fixture(false);
        let f = check(&m, 1);
        let b = find(&f, "busy polling");
        assert!(
            b.found.contains("busy_poll = 0 µs") && b.found.contains("busy_read = 50 µs"),
            "{b:?}"
        );
    }

    #[test]
    fn an_isolated_cpu_reads_as_good() {
        let (_d, m) = fixture(true);
        let f = check(&m, 1);
        for t in [
            "isolcpus",
            "nohz_full",
            "rcu_nocbs",
            "IRQ affinity",
            "workqueues",
        ] {
            assert_eq!(find(&f, t).status, Status::Good, "{:?}", find(&f, t));
        }
        // The same machine seen from CPU 0: not isolated.
        let f0 = check(&m, 0);
        assert_eq!(find(&f0, "isolcpus").status, Status::Warn);
        assert!(find(&f0, "isolcpus").found.contains("not the trader's CPU"));
    }

    #[test]
    fn the_live_machine_gives_every_finding() {
        let f = check(&Machine::live(), 0);
        assert!(f.len() >= 15, "{f:?}");
        let text = render(&f);
        assert!(text.contains("why:"));
    }
}
