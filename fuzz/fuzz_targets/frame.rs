//! Any bytes as an Ethernet frame into the trader's receive-path parser. Must not panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = afxdp::frame::parse_udp(data, netns::lab::MD_PORT);
});
