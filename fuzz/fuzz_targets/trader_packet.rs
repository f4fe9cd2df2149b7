//! Any sequence of payloads into the trader core (sequence tracking, decode, engine): no
//! panic, and every counted packet lands in a bucket.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let params = engine::Params::from_n(6).expect("n=6 is valid");
    let mut t = userspace::t2t::Trader::new(params, None);
    // Split the input into packets at 0xFF 0xFE markers, so one input holds a stream.
    for payload in data.split(|&b| b == 0xFE) {
        let _ = t.on_packet(payload, || 0, |_| true);
        t.prepare();
    }
    assert!(t.counters.packets >= 1);
});
