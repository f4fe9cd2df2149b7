//! Any sequence of payloads into the trader core (sequence tracking, decode, engine): no
//! panic, and every payload is counted.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let params = engine::Params::from_n(6).expect("n=6 is valid");
    let mut t = trader_core::Trader::new(params, None);
    // Split the input into packets at 0xFE bytes, so one input holds a stream.
    let mut payloads = 0u64;
    for payload in data.split(|&b| b == 0xFE) {
        let _ = t.on_packet(payload, || 0, |_| true);
        t.prepare();
        payloads += 1;
    }
    assert_eq!(t.counters.packets, payloads, "every payload counted once");
});
