//! Loading and attaching the lab's XDP program, and reading its counters.
use aya::{
    Ebpf, EbpfLoader,
    maps::{Array, MapData, PerCpuArray, RingBuf, XskMap},
    programs::{ProgramError, Xdp, XdpMode as AyaXdpMode, xdp::XdpLinkId},
};
use xdp_common::{
    Action, Counter, Fired, GLOBAL_ACTION, GLOBAL_FIRED_WAKEUP, GLOBAL_MD_PORT, GLOBAL_MD_PORT_B,
    GLOBAL_ORDER_DST_IP, GLOBAL_ORDER_DST_MAC, GLOBAL_ORDER_DST_PORT, GLOBAL_ORDER_SRC_IP,
    GLOBAL_ORDER_SRC_MAC, GLOBAL_ORDER_TCP, GLOBAL_TRIGGER_DST, GLOBAL_XDP_LOG, MAP_ARM,
    MAP_COUNTERS, MAP_FIRED, MAP_SOURCES, MAP_STAGES, MAP_XSKS, Mark, OrderTo, Outcome, PROG_NAME,
    STAGE_WORDS, Source, StageSums,
};

pub use paths::XdpStages;

/// The XDP program, built by `build.rs` and embedded here. Empty when the eBPF toolchain was
/// missing at build time.
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/xdp-ebpf"));
/// The same program with stage timing compiled in ([`Load::stages`]).
static OBJECT_STAGES: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/xdp-ebpf-stages"));
/// The same program with each run timed at its two ends ([`XdpStages::Run`]).
static OBJECT_RUN: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/xdp-ebpf-run"));

pub use paths::XdpMode;

fn to_aya(mode: XdpMode) -> AyaXdpMode {
    match mode {
        XdpMode::Native => AyaXdpMode::Driver,
        XdpMode::Skb => AyaXdpMode::Skb,
    }
}

/// Errors loading or attaching.
#[derive(Debug, thiserror::Error)]
pub enum XdpError {
    /// The binary was built without the eBPF toolchain.
    #[error(
        "this binary has no XDP program embedded (the eBPF toolchain was missing when it was \
         built): run `cargo xtask setup`, then rebuild"
    )]
    NotEmbedded,
    /// Missing privileges.
    #[error(transparent)]
    Privilege(#[from] netns::Error),
    /// The object didn't load (verifier, maps, BTF).
    #[error("failed to load the XDP program: {0}")]
    Load(#[source] aya::EbpfError),
    /// Program or map lookup or attach failed.
    #[error("{what}: {source}{hint}")]
    Program {
        /// What was being done.
        what: String,
        /// The error.
        #[source]
        source: ProgramError,
        /// What to try.
        hint: &'static str,
    },
    /// The program's log could not be read (aya-log: its ring map, or the reader thread).
    #[error("{0}")]
    Log(String),
    /// The kernel's BPF run-time statistics could not be turned on.
    #[error(
        "failed to enable BPF run-time statistics (BPF_ENABLE_STATS: kernel 5.8+ and \
         CAP_SYS_ADMIN): {0}"
    )]
    Stats(#[source] aya::sys::SyscallError),
    /// A map could not be memory-mapped.
    #[error("{what}: {source}")]
    Mmap {
        /// What was being done.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Map access failed.
    #[error("{what}: {source}")]
    Map {
        /// What was being done.
        what: String,
        /// The error.
        #[source]
        source: aya::maps::MapError,
    },
    /// Packets kept the program running through every try at a consistent snapshot.
    #[error(
        "the program's counters and stages kept moving through {tries} reads (packets still \
         arriving): no consistent snapshot"
    )]
    Unsettled {
        /// How many reads were tried.
        tries: usize,
    },
}

/// How many times [`XdpProgram::snapshot`] reads before giving up.
const SNAPSHOT_TRIES: usize = 16;
/// How long it waits between two reads.
const SNAPSHOT_PAUSE: std::time::Duration = std::time::Duration::from_micros(500);

/// How the program is loaded: its load-time globals besides the port and the action.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Load {
    /// The program logs its rare events (see [`XdpProgram::start_log`], which must follow to
    /// read them); off, the verifier removes the logging code.
    pub log: bool,
    /// Load a build of the program with timing compiled in ([`XdpProgram::stages`]): at every
    /// stage, or at each run's two ends; `None`, the object without it, the program every
    /// other measurement runs.
    pub stages: Option<XdpStages>,
    /// The trigger wakes a reader sleeping on its ring of fired orders (a trader that blocks);
    /// off, a reader must poll the ring (a spinning trader), and firing raises no interrupt.
    pub fired_wakeup: bool,
    /// The trigger fires only on frames addressed to this MAC and IPv4 address (the trader's,
    /// which its socket path checks too); `None`: not checked.
    pub trigger_dst: Option<([u8; 6], std::net::Ipv4Addr)>,
    /// Where the program's own orders go (the reflector's and the trigger's): the configured
    /// gateway's headers. `None`: nowhere, nothing is fired or reflected.
    pub order_to: Option<OrderTo>,
    /// The order session's TCP segments (from `order_to`'s gateway to us) go into the AF_XDP
    /// socket, for a userspace TCP (`trader --orders tcp-xdp`); off, the kernel has them.
    pub order_tcp: bool,
    /// The trigger fires the order session's armed TCP segment ([`SegmentMap`]) instead of the
    /// lab's UDP order (`trader --path trigger --orders tcp-xdp`).
    pub trigger_tcp: bool,
    /// The driver filter compiled in (`xdp_common::filter`): once armed ([`FilterMap::arm`]),
    /// line A's packets with nothing for the trader's stocks are dropped in the driver and every
    /// packet passed has its claim filed in `CLAIMS`. For the redirect action on a one-line feed.
    pub filter: bool,
    /// The trigger on a full-depth feed (`xdp_common::book_trigger`): it fires on the traded
    /// stock's prints through the firing set ([`BookTrigger`]), not on one-trade packets.
    pub trigger_book: bool,
}

/// The XDP program, loaded and attached to one interface. Dropping it detaches the program
/// (it is attached through a BPF link owned by this process, so even `kill -9` detaches it).
#[derive(Debug)]
pub struct XdpProgram {
    ebpf: Ebpf,
    _link: XdpLinkId,
    /// The kernel's run-time statistics, held on while this is (see
    /// [`XdpProgram::enable_run_stats`]).
    run_stats: Option<std::os::fd::OwnedFd>,
    /// Whether the program was loaded with its log on.
    logs: bool,
    /// Which timed build it was loaded from, if any.
    timed: Option<XdpStages>,
    /// Whether it was loaded to wake a sleeping reader when the trigger fires.
    fired_wakeup: bool,
    /// Whether it was loaded with the driver filter.
    filter: bool,
    /// The log reader, if started; last, so it is dropped after the program is detached and
    /// reads what the program logged to the end.
    log: Option<XdpLog>,
}

/// The OS error number at the bottom of an error's chain, if there is one.
fn os_error(e: &(dyn std::error::Error + 'static)) -> Option<i32> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return io.raw_os_error();
        }
        cur = err.source();
    }
    None
}

impl XdpProgram {
    /// Loads the program with the market-data `port` and `action`, and attaches it to `iface` in
    /// `mode`, in the calling thread's network namespace.
    pub fn attach(
        iface: &str,
        port: u16,
        mode: XdpMode,
        action: Action,
    ) -> Result<XdpProgram, XdpError> {
        Self::attach_lines(iface, port, None, mode, action, Load::default())
    }

    /// [`XdpProgram::attach`] for an A/B feed: market data on `port` (line A) and on `port_b`
    /// (line B, if any) alike, loaded with `load`'s options.
    pub fn attach_lines(
        iface: &str,
        port: u16,
        port_b: Option<u16>,
        mode: XdpMode,
        action: Action,
        load: Load,
    ) -> Result<XdpProgram, XdpError> {
        let port_b = port_b.unwrap_or(0);
        if OBJECT.is_empty() {
            return Err(XdpError::NotEmbedded);
        }
        netns::check_capabilities(&[netns::Capability::NetAdmin, netns::Capability::Bpf])?;
        let action = action as u8;
        let log = u8::from(load.log);
        let wakeup = u8::from(load.fired_wakeup);
        let mut dst = [0u8; 10];
        if let Some((mac, ip)) = load.trigger_dst {
            dst[..6].copy_from_slice(&mac);
            dst[6..].copy_from_slice(&ip.octets());
        }
        let to = load.order_to.unwrap_or_default();
        let order_tcp = u8::from(load.order_tcp && load.order_to.is_some());
        let trigger_tcp = u8::from(load.trigger_tcp && order_tcp == 1);
        let filter_on = u8::from(load.filter);
        let trigger_book = u8::from(load.trigger_book);
        let mut ebpf = EbpfLoader::new()
            .override_global(GLOBAL_MD_PORT, &port, true)
            .override_global(GLOBAL_MD_PORT_B, &port_b, true)
            .override_global(GLOBAL_ACTION, &action, true)
            .override_global(GLOBAL_XDP_LOG, &log, true)
            .override_global(GLOBAL_FIRED_WAKEUP, &wakeup, true)
            .override_global(GLOBAL_TRIGGER_DST, &dst, true)
            .override_global(GLOBAL_ORDER_DST_MAC, &to.dst_mac, true)
            .override_global(GLOBAL_ORDER_SRC_MAC, &to.src_mac, true)
            .override_global(GLOBAL_ORDER_SRC_IP, &to.src_ip, true)
            .override_global(GLOBAL_ORDER_DST_IP, &to.dst_ip, true)
            .override_global(GLOBAL_ORDER_DST_PORT, &to.dst_port, true)
            .override_global(GLOBAL_ORDER_TCP, &order_tcp, true)
            .override_global(xdp_common::segment::GLOBAL_TRIGGER_TCP, &trigger_tcp, true)
            .override_global(xdp_common::filter::GLOBAL_FILTER_ON, &filter_on, true)
            .override_global(
                xdp_common::book_trigger::GLOBAL_TRIGGER_BOOK,
                &trigger_book,
                true,
            )
            .load(match load.stages {
                None => OBJECT,
                Some(XdpStages::Each) => OBJECT_STAGES,
                Some(XdpStages::Run) => OBJECT_RUN,
            })
            .map_err(XdpError::Load)?;
        let prog: &mut Xdp = ebpf
            .program_mut(PROG_NAME)
            .ok_or_else(|| XdpError::Program {
                what: format!("program {PROG_NAME} not in the object"),
                source: ProgramError::NotLoaded,
                hint: "",
            })?
            .try_into()
            .map_err(|source| XdpError::Program {
                what: format!("{PROG_NAME} is not an XDP program"),
                source,
                hint: "",
            })?;
        prog.load().map_err(|source| XdpError::Program {
            what: "the verifier rejected the XDP program".into(),
            source,
            hint: "",
        })?;
        let link = prog
            .attach(iface, to_aya(mode))
            .map_err(|source| XdpError::Program {
                what: format!("failed to attach XDP to {iface} in {mode} mode"),
                hint: match (&source, mode) {
                    (ProgramError::UnknownInterface { .. }, _) => {
                        " (no such interface in this namespace: is the lab up?)"
                    }
                    (e, _) if os_error(e) == Some(libc::EBUSY) => {
                        " (an XDP program is already attached to it: another trader or replay? \
                         `cargo xtask netns-status` shows it)"
                    }
                    (_, XdpMode::Native) => " (the driver may lack native XDP: try --xdp-mode skb)",
                    _ => "",
                },
                source,
            })?;
        Ok(XdpProgram {
            ebpf,
            _link: link,
            run_stats: None,
            logs: log != 0,
            timed: load.stages,
            fired_wakeup: load.fired_wakeup,
            filter: load.filter,
            log: None,
        })
    }

    /// Starts printing the program's log records (aya-log) through the `log` crate's logger,
    /// from a thread that sleeps until a record arrives, until the program is dropped (then a
    /// last read, after the detach). Records only come when the program was attached with `log`.
    /// `housekeeping`: the CPUs the process may use (before the trader pinned itself); the
    /// thread moves onto those the caller is not pinned to, if any.
    pub fn start_log(&mut self, housekeeping: Vec<usize>) -> Result<(), XdpError> {
        let logger = aya_log::EbpfLogger::init(&mut self.ebpf).map_err(|e| {
            XdpError::Log(format!(
                "failed to open the XDP program's log ring (AYA_LOGS): {e}"
            ))
        })?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("xdp-log".into())
                .spawn(move || log_loop(logger, &stop, &housekeeping))
                .map_err(|e| XdpError::Log(format!("failed to start the XDP log thread: {e}")))?
        };
        self.log = Some(XdpLog {
            stop,
            thread: Some(thread),
        });
        Ok(())
    }

    /// Turns on the kernel's BPF run-time statistics (`BPF_ENABLE_STATS`: a count and a
    /// clock read around every BPF program run, system-wide) for as long as this program is
    /// loaded: the kernel turns them off again when the last holder's descriptor closes, also
    /// if the process dies, so nothing is left changed. They cost two clock reads per run.
    pub fn enable_run_stats(&mut self) -> Result<(), XdpError> {
        let fd = aya::sys::enable_stats(aya::sys::Stats::RunTime).map_err(|e| XdpError::Map {
            what: format!(
                "failed to enable BPF run-time statistics (kernel 5.8+, CAP_SYS_ADMIN): {e}"
            ),
            source: aya::maps::MapError::InvalidName {
                name: "BPF_ENABLE_STATS".into(),
            },
        })?;
        self.run_stats = Some(fd);
        Ok(())
    }

    /// What the kernel says of the loaded program: its size after the verifier (which has
    /// removed the logging code when the log global is off) and JIT-compiled, and, with
    /// [`XdpProgram::enable_run_stats`], its runs and their total time so far; with the
    /// `stages` of a [`XdpProgram::snapshot`], which they are reported with.
    pub fn program_stats(
        &self,
        stages: Option<Vec<results::OutcomeStages>>,
    ) -> Option<results::XdpProgramStats> {
        let prog: &Xdp = self.ebpf.program(PROG_NAME)?.try_into().ok()?;
        let info = prog.info().ok()?;
        let counted = self.run_stats.is_some();
        Some(results::XdpProgramStats {
            translated_bytes: info.size_translated()?,
            jited_bytes: info.size_jitted(),
            log: self.logs,
            runs: counted.then(|| info.run_count()),
            run_ns: counted.then(|| u64::try_from(info.run_time().as_nanos()).unwrap_or(u64::MAX)),
            stages,
        })
    }

    /// With stage timing on ([`Load::stages`]): per outcome that had runs, the mean time of
    /// each stage its runs passed, summed over CPUs.
    pub fn stages(&self) -> Result<Vec<results::OutcomeStages>, XdpError> {
        let map = self.ebpf.map(MAP_STAGES).ok_or_else(|| XdpError::Map {
            what: format!("map {MAP_STAGES} missing"),
            source: aya::maps::MapError::InvalidName {
                name: MAP_STAGES.into(),
            },
        })?;
        let array: PerCpuArray<&MapData, [u64; STAGE_WORDS]> =
            PerCpuArray::try_from(map).map_err(|source| XdpError::Map {
                what: format!("{MAP_STAGES} is not a per-CPU array"),
                source,
            })?;
        let mut out = Vec::new();
        for outcome in Outcome::ALL {
            let per_cpu = array
                .get(&(outcome as u32), 0)
                .map_err(|source| XdpError::Map {
                    what: format!("reading {MAP_STAGES}[{}]", outcome.name()),
                    source,
                })?;
            let mut sums = StageSums::default();
            for words in per_cpu.iter() {
                sums.add(&StageSums::from_words(words));
            }
            if let Some(o) = outcome_stages(outcome, &sums, self.timed) {
                out.push(o);
            }
        }
        Ok(out)
    }

    /// The trigger path's arm ([`Action::Trigger`]), to write between ticks (once: the map
    /// moves to the caller). The array is memory-mapped: writing an arm is a few stores under a
    /// sequence lock, no system call and no lookup.
    pub fn take_arm(&mut self) -> Result<ArmMap, XdpError> {
        let missing = || XdpError::Map {
            what: format!("map {MAP_ARM} missing (or already taken)"),
            source: aya::maps::MapError::InvalidName {
                name: MAP_ARM.into(),
            },
        };
        let aya::maps::Map::Array(map) = self.ebpf.take_map(MAP_ARM).ok_or_else(missing)? else {
            return Err(missing());
        };
        arm_mem::ArmMap::map(map).map_err(|source| XdpError::Mmap {
            what: format!(
                "failed to memory-map the trigger's {MAP_ARM} array (needs a kernel of 5.5 or \
                 later, 5.8 for the trigger as a whole, and a program built with \
                 BPF_F_MMAPABLE)"
            ),
            source,
        })
    }

    /// The TCP trigger's segment (`Load::trigger_tcp`), for the userspace TCP to write between
    /// ticks (once: the map moves to the caller); memory-mapped like the arm.
    pub fn take_segment(&mut self) -> Result<SegmentMap, XdpError> {
        use xdp_common::segment::MAP_SEGMENT;
        let missing = || XdpError::Map {
            what: format!("map {MAP_SEGMENT} missing (or already taken)"),
            source: aya::maps::MapError::InvalidName {
                name: MAP_SEGMENT.into(),
            },
        };
        let aya::maps::Map::Array(map) = self.ebpf.take_map(MAP_SEGMENT).ok_or_else(missing)?
        else {
            return Err(missing());
        };
        arm_mem::SegmentMap::map(map).map_err(|source| XdpError::Mmap {
            what: format!("failed to memory-map the TCP trigger's {MAP_SEGMENT} array"),
            source,
        })
    }

    /// The userspace TCP's live local port ([`xdp_common::MAP_ORDER_PORT`]), for the session to
    /// write at each connect (once: the map moves to the caller).
    pub fn take_order_port(&mut self) -> Result<OrderPortMap, XdpError> {
        use xdp_common::MAP_ORDER_PORT;
        let map = self
            .ebpf
            .take_map(MAP_ORDER_PORT)
            .ok_or_else(|| XdpError::Map {
                what: format!("map {MAP_ORDER_PORT} missing (or already taken)"),
                source: aya::maps::MapError::InvalidName {
                    name: MAP_ORDER_PORT.into(),
                },
            })?;
        let map = Array::try_from(map).map_err(|source| XdpError::Map {
            what: format!("map {MAP_ORDER_PORT} is not an array of 4-byte values"),
            source,
        })?;
        Ok(OrderPortMap { map })
    }

    /// The trigger's record of what it fired (once: the ring moves to the caller).
    pub fn take_fired(&mut self) -> Result<FiredRing, XdpError> {
        let map = self.ebpf.take_map(MAP_FIRED).ok_or_else(|| XdpError::Map {
            what: format!("map {MAP_FIRED} missing (or already taken)"),
            source: aya::maps::MapError::InvalidName {
                name: MAP_FIRED.into(),
            },
        })?;
        let ring = RingBuf::try_from(map).map_err(|source| XdpError::Map {
            what: format!("map {MAP_FIRED} is not a ring buffer"),
            source,
        })?;
        Ok(FiredRing(ring))
    }

    /// The feed's pinned sources ([`MAP_SOURCES`]), to pin at start and when the trader has
    /// learned them (once: the map moves to the caller).
    pub fn take_sources(&mut self) -> Result<SourcesMap, XdpError> {
        let missing = || XdpError::Map {
            what: format!("map {MAP_SOURCES} missing (or already taken)"),
            source: aya::maps::MapError::InvalidName {
                name: MAP_SOURCES.into(),
            },
        };
        let map = self.ebpf.take_map(MAP_SOURCES).ok_or_else(missing)?;
        let array = Array::try_from(map).map_err(|source| XdpError::Map {
            what: format!("map {MAP_SOURCES} is not an array of 8-byte values"),
            source,
        })?;
        Ok(SourcesMap(array))
    }

    /// Whether it was loaded with the driver filter ([`Load::filter`]).
    pub fn filters(&self) -> bool {
        self.filter
    }

    /// The driver filter's maps, to arm it when the trader has confirmed its feed and resolved
    /// its symbols (once: the maps move to the caller).
    pub fn take_filter(&mut self) -> Result<(FilterMap, ClaimsMap), XdpError> {
        let mut take = |name: &str| {
            let map = self.ebpf.take_map(name).ok_or_else(|| XdpError::Map {
                what: format!("map {name} missing (or already taken)"),
                source: aya::maps::MapError::InvalidName { name: name.into() },
            })?;
            Array::try_from(map).map_err(|source| XdpError::Map {
                what: format!("map {name} is not an array of 8-byte values"),
                source,
            })
        };
        let locates = take(xdp_common::filter::MAP_LOCATES)?;
        let filter = take(xdp_common::filter::MAP_FILTER)?;
        let name = xdp_common::filter::MAP_CLAIMS;
        let map = self.ebpf.take_map(name).ok_or_else(|| XdpError::Map {
            what: format!("map {name} missing (or already taken)"),
            source: aya::maps::MapError::InvalidName { name: name.into() },
        })?;
        let map = match map {
            aya::maps::Map::Array(m) => m,
            _ => {
                return Err(XdpError::Map {
                    what: format!("map {name} is not an array"),
                    source: aya::maps::MapError::InvalidName { name: name.into() },
                });
            }
        };
        let claims = arm_mem::ClaimsMap::map(map).map_err(|source| XdpError::Mmap {
            what: format!("failed to memory-map the driver filter's {name} array"),
            source,
        })?;
        Ok((FilterMap { locates, filter }, claims))
    }

    /// The book trigger's maps ([`Load::trigger_book`]): the firing set, the traded stock's
    /// locate, and the copy of each fired packet (once: the maps move to the caller).
    pub fn take_book_trigger(&mut self) -> Result<BookTrigger, XdpError> {
        use xdp_common::book_trigger::{MAP_FIRED_PACKET, MAP_FIRING, MAP_FIRING_STOCK};
        let mut take = |name: &str| {
            self.ebpf.take_map(name).ok_or_else(|| XdpError::Map {
                what: format!("map {name} missing (or already taken)"),
                source: aya::maps::MapError::InvalidName { name: name.into() },
            })
        };
        let firing = take(MAP_FIRING)?;
        let stock = take(MAP_FIRING_STOCK)?;
        let packet = take(MAP_FIRED_PACKET)?;
        let firing = aya::maps::HashMap::try_from(firing).map_err(|source| XdpError::Map {
            what: format!("map {MAP_FIRING} is not a hash map of u64 to u64"),
            source,
        })?;
        let stock = Array::try_from(stock).map_err(|source| XdpError::Map {
            what: format!("map {MAP_FIRING_STOCK} is not an array of 8-byte values"),
            source,
        })?;
        let aya::maps::Map::Array(packet) = packet else {
            return Err(XdpError::Map {
                what: format!("map {MAP_FIRED_PACKET} is not an array"),
                source: aya::maps::MapError::InvalidName {
                    name: MAP_FIRED_PACKET.into(),
                },
            });
        };
        let packet = arm_mem::FiredPacketMap::map(packet).map_err(|source| XdpError::Mmap {
            what: format!("failed to memory-map the book trigger's {MAP_FIRED_PACKET} array"),
            source,
        })?;
        Ok(BookTrigger {
            firing,
            stock,
            packet,
        })
    }

    /// Puts an AF_XDP socket into the XSKMAP slot of `queue`.
    pub fn register_socket(&mut self, queue: u32, fd: std::os::fd::RawFd) -> Result<(), XdpError> {
        let map = self.ebpf.map_mut(MAP_XSKS).ok_or_else(|| XdpError::Map {
            what: format!("map {MAP_XSKS} missing"),
            source: aya::maps::MapError::InvalidName {
                name: MAP_XSKS.into(),
            },
        })?;
        let mut xsks: XskMap<&mut MapData> =
            XskMap::try_from(map).map_err(|source| XdpError::Map {
                what: format!("{MAP_XSKS} is not an XSKMAP"),
                source,
            })?;
        // SAFETY-free: aya takes the fd by AsRawFd; a borrowed raw fd is valid for this call.
        xsks.set(queue, BorrowedRaw(fd), 0)
            .map_err(|source| XdpError::Map {
                what: format!("failed to put the socket into {MAP_XSKS}[{queue}]"),
                source,
            })
    }

    /// The counters and, with stage timing on, the stages, read as one snapshot: each run
    /// adds to one counter and one outcome's stages, and a run that lands between the separate
    /// map reads would otherwise be in one and not the other. The stages are read on both sides
    /// of the counters and the read is taken again until nothing ran in between (a few tries,
    /// half a millisecond apart; after the loop has ended only the exchange's end-of-session
    /// repeats, 2 ms apart, still arrive). The program counts a run before it records its
    /// stages, so a run caught between its two stores (a few instructions) can still be in
    /// the counters and not the stages.
    pub fn snapshot(&self) -> Result<(Counters, Option<Vec<results::OutcomeStages>>), XdpError> {
        if self.timed.is_none() {
            return Ok((self.counters()?, None));
        }
        let runs = |s: &Vec<results::OutcomeStages>| s.iter().map(|o| o.runs).sum::<u64>();
        let (counters, stages) = settled(|| self.stages(), || self.counters(), runs)?;
        Ok((counters, Some(stages)))
    }

    /// Whether the program was loaded to wake a sleeping reader when the trigger fires
    /// ([`Load::fired_wakeup`]).
    pub fn wakes_on_fire(&self) -> bool {
        self.fired_wakeup
    }

    /// Every counter summed over CPUs, in [`Counter::ALL`] order.
    pub fn counters(&self) -> Result<Counters, XdpError> {
        let map = self.ebpf.map(MAP_COUNTERS).ok_or_else(|| XdpError::Map {
            what: format!("map {MAP_COUNTERS} missing"),
            source: aya::maps::MapError::InvalidName {
                name: MAP_COUNTERS.into(),
            },
        })?;
        let array: PerCpuArray<&MapData, u64> =
            PerCpuArray::try_from(map).map_err(|source| XdpError::Map {
                what: format!("{MAP_COUNTERS} is not a per-CPU array"),
                source,
            })?;
        let mut out = Counters::default();
        for c in Counter::ALL {
            let per_cpu = array.get(&c.index(), 0).map_err(|source| XdpError::Map {
                what: format!("reading {MAP_COUNTERS}[{}]", c.name()),
                source,
            })?;
            out.0[c.index() as usize] = per_cpu.iter().sum();
        }
        Ok(out)
    }
}

/// Reads `stages`, then `counters` and `stages` again until the stages' `runs` did not move
/// across the counters' read: the counters and the stages read last then count the same runs.
fn settled<C, S>(
    mut stages: impl FnMut() -> Result<S, XdpError>,
    mut counters: impl FnMut() -> Result<C, XdpError>,
    runs: impl Fn(&S) -> u64,
) -> Result<(C, S), XdpError> {
    let mut before = runs(&stages()?);
    for _ in 0..SNAPSHOT_TRIES {
        let c = counters()?;
        let after = stages()?;
        let now = runs(&after);
        if now == before {
            return Ok((c, after));
        }
        before = now;
        std::thread::sleep(SNAPSHOT_PAUSE);
    }
    Err(XdpError::Unsettled {
        tries: SNAPSHOT_TRIES,
    })
}

/// One outcome's stage means from its summed runs (`None` without runs): each stage the runs
/// passed, net of the one clock read it includes. Timed at its ends only ([`XdpStages::Run`]),
/// the program adds the whole run to its last mark's sum: one stage, `run`.
fn outcome_stages(
    outcome: Outcome,
    sums: &StageSums,
    timed: Option<XdpStages>,
) -> Option<results::OutcomeStages> {
    if sums.runs == 0 {
        return None;
    }
    let runs = sums.runs as f64;
    let clock = sums.ns[Mark::Start as usize] as f64 / runs;
    if timed == Some(XdpStages::Run) {
        // The run build marks only the end; should any other mark have a sum, it is still
        // the one run.
        let ns: u64 = Mark::ALL[1..].iter().map(|m| sums.ns[*m as usize]).sum();
        return Some(results::OutcomeStages {
            outcome: outcome.name().to_owned(),
            runs: sums.runs,
            clock_read_ns: clock,
            stages: vec![results::StageMean {
                stage: results::RUN_STAGE.to_owned(),
                mean_ns: ns as f64 / runs - clock,
            }],
        });
    }
    let stages = Mark::ALL[1..]
        .iter()
        .filter(|m| sums.ns[**m as usize] != 0)
        .map(|m| results::StageMean {
            stage: m.stage_name().to_owned(),
            mean_ns: sums.ns[*m as usize] as f64 / runs - clock,
        })
        .collect();
    Some(results::OutcomeStages {
        outcome: outcome.name().to_owned(),
        runs: sums.runs,
        clock_read_ns: clock,
        stages,
    })
}

/// A raw fd lent to aya for one call.
struct BorrowedRaw(std::os::fd::RawFd);

impl std::os::fd::AsRawFd for BorrowedRaw {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.0
    }
}

pub use arm_mem::{ArmMap, ClaimsMap, FiredPacketMap, SegmentMap, Withdrawn};

mod arm_mem;

/// The ring of [`Fired`] records the trigger writes when a blocking reader must be woken
/// (`Load::fired_wakeup`); what fired is read from the record's line ([`ArmMap::last_fired`]).
pub struct FiredRing(RingBuf<MapData>);

impl std::fmt::Debug for FiredRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FiredRing")
    }
}

impl FiredRing {
    /// The next record, if one is waiting.
    #[inline]
    pub fn next_fired(&mut self) -> Option<Fired> {
        let item = self.0.next()?;
        Fired::from_bytes(&item)
    }
}

impl std::os::fd::AsFd for FiredRing {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.0.as_fd()
    }
}

/// The thread printing the XDP program's log records; stopped (after a last read) on drop.
#[derive(Debug)]
struct XdpLog {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for XdpLog {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// How long the log thread sleeps in `poll` before it looks at its stop flag.
const LOG_POLL_MS: u16 = 100;

fn log_loop(
    mut logger: aya_log::EbpfLogger<&'static dyn log::Log>,
    stop: &std::sync::atomic::AtomicBool,
    housekeeping: &[usize],
) {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd as _;
    // Off the trader's core: a pinned trader's threads inherit its one CPU, and this thread's
    // wake-ups must not preempt the trading loop there.
    let _ = affinity::move_off_current_cpus(housekeeping);
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let ready = {
            let mut fds = [PollFd::new(logger.as_fd(), PollFlags::POLLIN)];
            poll(&mut fds, PollTimeout::from(LOG_POLL_MS))
        };
        if ready.is_ok_and(|n| n > 0) {
            logger.flush();
        }
    }
    logger.flush();
    log::logger().flush();
}

/// The program's table of the feed's pinned sources: line A, line B, the re-request server
/// (`xdp_common::SOURCE_*`). Writing an entry is a map update (a system call): at start, and
/// once when the trader pins a source it learned.
pub struct SourcesMap(Array<MapData, u64>);

impl std::fmt::Debug for SourcesMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SourcesMap")
    }
}

impl SourcesMap {
    /// Pins entry `index` to `source`: from then on the program drops market data to that
    /// line from any other address or port (`foreign_source_*`).
    pub fn pin(&mut self, index: u32, source: &Source) -> Result<(), XdpError> {
        self.0
            .set(index, u64::from_ne_bytes(source.to_bytes()), 0)
            .map_err(|source| XdpError::Map {
                what: format!("failed to pin {MAP_SOURCES}[{index}]"),
                source,
            })
    }
}

/// The userspace TCP's live local port in the program ([`XdpProgram::take_order_port`]): only
/// segments to it from the gateway are steered to the stack; every other from the gateway's
/// address and port is dropped.
pub struct OrderPortMap {
    map: Array<MapData, u32>,
}

impl std::fmt::Debug for OrderPortMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OrderPortMap")
    }
}

impl OrderPortMap {
    /// The connection now being made is from local `port` (0: none; nothing is steered).
    pub fn set(&mut self, port: u16) -> Result<(), XdpError> {
        self.map
            .set(0, u32::from(port), 0)
            .map_err(|source| XdpError::Map {
                what: format!("failed to write {}", xdp_common::MAP_ORDER_PORT),
                source,
            })
    }
}

/// The book trigger's maps ([`XdpProgram::take_book_trigger`], `xdp_common::book_trigger`): the
/// firing set, the traded stock's locate, and the copy of each fired datagram.
pub struct BookTrigger {
    firing: aya::maps::HashMap<MapData, u64, u64>,
    stock: Array<MapData, u64>,
    packet: arm_mem::FiredPacketMap,
}

impl std::fmt::Debug for BookTrigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BookTrigger")
    }
}

impl BookTrigger {
    /// Names the traded stock's locate (once the Stock Directory has): nothing fires before.
    pub fn set_locate(&mut self, locate: u16) -> Result<(), XdpError> {
        self.stock
            .set(0, u64::from(locate) + 1, 0)
            .map_err(|source| XdpError::Map {
                what: "failed to write FIRING_STOCK".into(),
                source,
            })
    }

    /// A resting order of the traded stock, at `price` (Price(4)) with `shares` open, now in
    /// the firing set (added, or its open shares changed).
    pub fn rest(&mut self, order_ref: u64, price: u32, shares: u32) -> Result<(), XdpError> {
        self.firing
            .insert(
                order_ref,
                xdp_common::book_trigger::firing_value(price, shares),
                0,
            )
            .map_err(|source| XdpError::Map {
                what: format!("failed to put order {order_ref} into FIRING"),
                source,
            })
    }

    /// An order gone from the book: out of the firing set (one that was never in is fine).
    pub fn gone(&mut self, order_ref: u64) -> Result<(), XdpError> {
        match self.firing.remove(&order_ref) {
            Ok(()) => Ok(()),
            Err(aya::maps::MapError::KeyNotFound) => Ok(()),
            Err(source) => Err(XdpError::Map {
                what: format!("failed to take order {order_ref} out of FIRING"),
                source,
            }),
        }
    }

    /// The UDP datagram the program copied for the fire of arm generation `generation`, if
    /// the copy is that fire's.
    pub fn fired_packet(&self, generation: u32) -> Option<&[u8]> {
        self.packet.datagram(generation)
    }
}

/// The driver filter's locate map and arming (`xdp_common::filter`).
pub struct FilterMap {
    locates: Array<MapData, u64>,
    filter: Array<MapData, u64>,
}

impl std::fmt::Debug for FilterMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FilterMap")
    }
}

impl FilterMap {
    /// Arms the filter for `session`, keeping the stock locates whose bits `locates` sets
    /// (and locate 0, the system's, always): the locate words first, then the session, then
    /// the armed word, so the program never filters on a half-written set. One map update a
    /// nonzero word (the map starts zeroed).
    pub fn arm(&mut self, session: [u8; 10], locates: &[u64]) -> Result<(), XdpError> {
        use xdp_common::filter::{FILTER_ARMED, FILTER_SESSION_HEAD, FILTER_SESSION_TAIL};
        let fail = |what: String| move |source| XdpError::Map { what, source };
        for (i, &w) in locates.iter().enumerate() {
            let w = if i == 0 { w | 1 } else { w };
            if w != 0 {
                let i = u32::try_from(i).unwrap_or(u32::MAX);
                self.locates
                    .set(i, w, 0)
                    .map_err(fail(format!("failed to write LOCATES[{i}]")))?;
            }
        }
        let (head, tail) = xdp_common::filter::session_words(session);
        for (i, w) in [
            (FILTER_SESSION_HEAD, head),
            (FILTER_SESSION_TAIL, tail),
            (FILTER_ARMED, 1),
        ] {
            self.filter
                .set(i, w, 0)
                .map_err(fail(format!("failed to write FILTER[{i}]")))?;
        }
        Ok(())
    }
}

/// The program's counters, summed over CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters(pub [u64; Counter::COUNT as usize]);

impl Counters {
    /// One counter.
    pub fn get(&self, c: Counter) -> u64 {
        self.0[c.index() as usize]
    }

    /// The report's form: one named field per counter.
    pub fn to_report(&self) -> results::XdpCounters {
        let mut r = results::XdpCounters::default();
        for c in Counter::ALL {
            let slot = match c {
                Counter::Redirected => &mut r.redirected,
                Counter::RedirectFailed => &mut r.redirect_failed,
                Counter::PassedMarketData => &mut r.passed_market_data,
                Counter::PassedNotIpv4 => &mut r.passed_not_ipv4,
                Counter::PassedNotUdp => &mut r.passed_not_udp,
                Counter::PassedOtherPort => &mut r.passed_other_port,
                Counter::PassedFragment => &mut r.passed_fragment,
                Counter::PassedIpOptions => &mut r.passed_ip_options,
                Counter::Malformed => &mut r.malformed,
                Counter::Reflected => &mut r.reflected,
                Counter::ReflectFailed => &mut r.reflect_failed,
                Counter::Logged => &mut r.logged,
                Counter::LogSuppressed => &mut r.log_suppressed,
                Counter::TriggerFired => &mut r.trigger_fired,
                Counter::TriggerNotInSet => &mut r.trigger_not_in_set,
                Counter::TriggerArmBusy => &mut r.trigger_arm_busy,
                Counter::ForeignSourceAddr => &mut r.foreign_source_addr,
                Counter::ForeignSourcePort => &mut r.foreign_source_port,
                Counter::OrderSegments => &mut r.order_segments,
                Counter::TriggerNoSegment => &mut r.trigger_no_segment,
                Counter::FilteredPackets => &mut r.filtered_packets,
                Counter::FilteredMessages => &mut r.filtered_messages,
                Counter::FilterUnclaimed => &mut r.filter_unclaimed,
                Counter::OrderSegmentsDropped => &mut r.order_segments_dropped,
            };
            *slot = self.get(c);
        }
        r
    }
}

impl std::fmt::Display for Counters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut first = true;
        for c in Counter::ALL {
            if !first {
                f.write_str(" ")?;
            }
            first = false;
            write!(f, "{}={}", c.name(), self.get(c))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A program run lands between the first stage read and the counters (as the exchange's
    /// end-of-session repeats do after the loop): the snapshot is taken again, and what it
    /// returns counts the same runs in the counters and in the stages.
    #[test]
    fn a_snapshot_is_read_again_until_no_run_lands_inside_it() {
        // The program's state: runs completed so far; each read of the stages or the
        // counters sees it, and a run lands right after each of the first two stage reads.
        let runs = Cell::new(10u64);
        let stage_reads = Cell::new(0);
        let stages = || {
            let seen = runs.get();
            stage_reads.set(stage_reads.get() + 1);
            if stage_reads.get() <= 2 {
                runs.set(runs.get() + 1);
            }
            Ok(seen)
        };
        let (counters, stages) = settled(stages, || Ok(runs.get()), |s| *s).unwrap();
        assert_eq!(
            counters, stages,
            "the counters and stages count the same runs"
        );
        assert_eq!(stages, 12);
        assert_eq!(stage_reads.get(), 4, "two reads moved, then two agreed");
    }

    #[test]
    fn a_program_that_never_stops_running_gives_no_snapshot() {
        let runs = Cell::new(0u64);
        let stages = || {
            runs.set(runs.get() + 1);
            Ok(runs.get())
        };
        let err = settled(stages, || Ok(()), |s| *s).unwrap_err();
        assert!(
            matches!(
                err,
                XdpError::Unsettled {
                    tries: SNAPSHOT_TRIES
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn stage_means_are_net_of_one_clock_read_and_skip_stages_not_passed() {
        let mut sums = StageSums {
            runs: 4,
            ..StageSums::default()
        };
        sums.ns[Mark::Start as usize] = 80; // 20 ns a clock read
        sums.ns[Mark::Classified as usize] = 200; // 50 raw, 30 net
        sums.ns[Mark::Redirected as usize] = 120; // 30 raw, 10 net
        sums.ns[Mark::End as usize] = 100; // 25 raw, 5 net
        let o =
            outcome_stages(Outcome::Redirected, &sums, Some(XdpStages::Each)).expect("it had runs");
        assert_eq!(o.outcome, "redirected");
        assert_eq!(o.runs, 4);
        assert_eq!(o.clock_read_ns, 20.0);
        let names: Vec<&str> = o.stages.iter().map(|s| s.stage.as_str()).collect();
        assert_eq!(names, ["classify", "redirect", "count_and_return"]);
        assert_eq!(o.stage("classify"), Some(30.0));
        assert_eq!(o.stage("arm_read"), None);
        assert_eq!(o.total_ns(), 45.0);
        assert!(
            outcome_stages(Outcome::Fired, &StageSums::default(), Some(XdpStages::Each)).is_none()
        );
        // Timed at its ends only, the program adds the whole run to the last mark: one stage.
        let mut ends = StageSums {
            runs: 4,
            ..StageSums::default()
        };
        ends.ns[Mark::Start as usize] = 80;
        ends.ns[Mark::End as usize] = 480; // 120 raw, 100 net
        let o = outcome_stages(Outcome::Fired, &ends, Some(XdpStages::Run)).expect("it had runs");
        let names: Vec<&str> = o.stages.iter().map(|s| s.stage.as_str()).collect();
        assert_eq!(names, [results::RUN_STAGE]);
        assert_eq!(o.total_ns(), 100.0);
    }
}
