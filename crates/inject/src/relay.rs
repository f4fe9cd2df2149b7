//! `inject relay`: a UDP relay from the replay to the trader that loses, duplicates, reorders
//! and delays packets from a seeded generator, and records exactly what it did.
use std::{
    collections::VecDeque,
    net::{SocketAddrV4, UdpSocket},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use wire::moldudp64;

use crate::{RelayOptions, report::RelayReport};

/// A small seeded generator (SplitMix64): the same seed gives the same faults.
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Lies to tell, before given packets.
#[derive(Debug, Clone)]
struct Lies {
    stray_at: Vec<u64>,
    stray_session: moldudp64::Session,
    forge_at: Vec<u64>,
    forge_jump: u64,
}

/// The faults to apply, as probabilities per packet.
#[derive(Debug, Clone, Copy)]
struct Faults {
    loss: f64,
    dup: f64,
    reorder: f64,
    reorder_depth: usize,
    delay: Duration,
}

/// The relay's state: what is waiting to go out, and what it did so far.
struct Relay {
    sock: UdpSocket,
    target: SocketAddrV4,
    faults: Faults,
    lies: Lies,
    rng: Rng,
    /// Packets waiting for their due time, in arrival order (a constant delay keeps the order).
    delayed: VecDeque<(Instant, Vec<u8>)>,
    /// Held-back packets and how many later packets must pass them first.
    held: Vec<(usize, Vec<u8>)>,
    report: RelayReport,
}

pub(crate) fn run(o: RelayOptions) -> anyhow::Result<()> {
    let RelayOptions {
        listen,
        target,
        loss,
        dup,
        reorder,
        reorder_depth,
        delay_us,
        seed,
        stray_at,
        stray_session,
        forge_at,
        forge_jump,
        idle_exit,
        order_listen,
        order_to,
        ready,
        json_out,
    } = o;
    for (name, p) in [("loss", loss), ("dup", dup), ("reorder", reorder)] {
        if !(0.0..=1.0).contains(&p) {
            bail!("--{name} must be a probability in [0, 1], got {p}");
        }
    }
    let sock = UdpSocket::bind(listen).with_context(|| format!("failed to bind {listen}"))?;
    match (order_listen, order_to) {
        (Some(from), Some(to)) => forward_orders(&sock, from, to)?,
        (None, None) => {}
        _ => bail!("--order-listen and --order-to go together"),
    }
    let faults = Faults {
        loss,
        dup,
        reorder,
        reorder_depth,
        delay: Duration::from_micros(delay_us),
    };
    let mut relay = Relay {
        sock,
        target,
        faults,
        lies: Lies {
            stray_at,
            stray_session,
            forge_at,
            forge_jump,
        },
        rng: Rng(seed),
        delayed: VecDeque::new(),
        held: Vec::new(),
        report: RelayReport::default(),
    };
    if ready {
        println!("ready");
    }
    relay.serve(Duration::from_secs(idle_exit))?;
    relay.flush()?;
    let json = serde_json::to_string_pretty(&relay.report)?;
    std::fs::write(&json_out, json).with_context(|| format!("writing {}", json_out.display()))?;
    Ok(())
}

/// Passes the trader's orders from `from` on to `to` unharmed, from the relay's own socket
/// (the replay takes datagrams only from the address it sends to), on a thread that ends
/// with the process.
fn forward_orders(sock: &UdpSocket, from: SocketAddrV4, to: SocketAddrV4) -> anyhow::Result<()> {
    let orders = UdpSocket::bind(from).with_context(|| format!("failed to bind {from}"))?;
    let back = sock.try_clone().context("cloning the relay socket")?;
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while let Ok(n) = orders.recv(&mut buf) {
            let _ = back.send_to(&buf[..n], to);
        }
    });
    Ok(())
}

impl Relay {
    /// Relays until the end of session has gone out (and 100 ms more for stragglers) or no
    /// packet came for `idle_exit`.
    fn serve(&mut self, idle_exit: Duration) -> anyhow::Result<()> {
        let mut buf = [0u8; 2048];
        let mut last_data = Instant::now();
        let mut eos_at: Option<Instant> = None;
        loop {
            self.send_due()?;
            if eos_at.is_some_and(|t| t.elapsed() > Duration::from_millis(100))
                && self.delayed.is_empty()
            {
                return Ok(());
            }
            if last_data.elapsed() > idle_exit {
                return Ok(());
            }
            let wait = self
                .delayed
                .front()
                .map(|(due, _)| due.saturating_duration_since(Instant::now()))
                .unwrap_or(Duration::from_millis(20))
                .max(Duration::from_micros(50));
            self.sock.set_read_timeout(Some(wait))?;
            let n = match self.sock.recv(&mut buf) {
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    continue;
                }
                Err(e) => return Err(e).context("receiving"),
            };
            last_data = Instant::now();
            if self.on_packet(&buf[..n], last_data)? {
                eos_at.get_or_insert_with(Instant::now);
            }
        }
    }

    /// Takes one packet from the replay: applies the faults, or for the end of session sends
    /// everything still waiting and then it. Returns whether it was the end of session.
    fn on_packet(&mut self, p: &[u8], arrived: Instant) -> anyhow::Result<bool> {
        self.report.received_packets += 1;
        let header = moldudp64::Packet::new_checked(p).ok();
        if header.as_ref().is_some_and(|h| h.is_end_of_session()) {
            // Everything still held goes first, then the end of session, unharmed.
            self.flush()?;
            self.send(p)?;
            self.report.end_of_session += 1;
            return Ok(true);
        }
        let (first, count) = header.map_or((0, 0), |h| (h.sequence(), h.block_count()));
        self.report.received_messages += u64::from(count);
        if count > 0 {
            self.lie_before(p, first)?;
        }
        let Faults {
            loss,
            dup,
            reorder,
            reorder_depth,
            delay,
        } = self.faults;
        if self.rng.next_f64() < loss {
            self.report
                .lost
                .extend((0..u64::from(count)).map(|k| first + k));
            return Ok(false);
        }
        let copies = if self.rng.next_f64() < dup {
            self.report.duplicated.push(first);
            2
        } else {
            1
        };
        if reorder_depth > 0 && self.rng.next_f64() < reorder {
            self.report.reordered.push(first);
            for _ in 0..copies {
                self.held.push((reorder_depth, p.to_vec()));
            }
            return Ok(false);
        }
        for _ in 0..copies {
            self.delayed.push_back((arrived + delay, p.to_vec()));
        }
        Ok(false)
    }

    /// Sends the lies asked for before the packet `p` numbered `first`, at once (no fault
    /// applies to them).
    fn lie_before(&mut self, p: &[u8], first: u64) -> anyhow::Result<()> {
        if self.lies.stray_at.contains(&first) {
            let mut copy = p.to_vec();
            moldudp64::Packet::new_unchecked(&mut copy[..]).set_session(self.lies.stray_session);
            self.send(&copy)?;
            self.report.stray_session.push(first);
        }
        if self.lies.forge_at.contains(&first) {
            let forged = first.saturating_add(self.lies.forge_jump);
            let mut copy = p.to_vec();
            moldudp64::Packet::new_unchecked(&mut copy[..]).set_sequence(forged);
            self.send(&copy)?;
            self.report.forged_seq.push(forged);
        }
        Ok(())
    }

    /// Sends the delayed packets that are due; each one sent lets the held-back ones move one
    /// place further behind, and those whose turn has come go too.
    fn send_due(&mut self) -> anyhow::Result<()> {
        let now = Instant::now();
        while self.delayed.front().is_some_and(|(due, _)| *due <= now) {
            let (_, p) = self.delayed.pop_front().expect("checked just above");
            self.send(&p)?;
            let mut i = 0;
            while i < self.held.len() {
                self.held[i].0 = self.held[i].0.saturating_sub(1);
                if self.held[i].0 == 0 {
                    let (_, h) = self.held.swap_remove(i);
                    self.send(&h)?;
                } else {
                    i += 1;
                }
            }
        }
        Ok(())
    }

    /// Sends everything still waiting: the delayed packets, then the held-back ones.
    fn flush(&mut self) -> anyhow::Result<()> {
        for (_, p) in std::mem::take(&mut self.delayed) {
            self.send(&p)?;
        }
        for (_, h) in std::mem::take(&mut self.held) {
            self.send(&h)?;
        }
        Ok(())
    }

    fn send(&mut self, p: &[u8]) -> anyhow::Result<()> {
        self.sock.send_to(p, self.target).context("forwarding")?;
        self.report.forwarded_packets += 1;
        Ok(())
    }
}
