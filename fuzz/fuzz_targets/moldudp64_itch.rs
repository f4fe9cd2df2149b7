//! Any bytes as a MoldUDP64 packet: header, every block, every ITCH message. Must not panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = wire::moldudp64::Packet::new_checked(data) {
        let _ = wire::moldudp64::Repr::parse(&p);
        for block in p.messages().flatten() {
            let _ = wire::itch::parse(block);
        }
    }
    let _ = wire::itch::parse(data);
});
