//! Any bytes as a payload of orders; a decoded order must re-encode to the same bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for (i, order) in wire::order::orders(data).enumerate() {
        if let Ok(o) = order {
            let mut buf = [0u8; wire::order::LEN];
            let n = o.emit_into(&mut buf).expect("an order fits its own length");
            assert_eq!(&buf[..n], &data[i * wire::order::LEN..(i + 1) * wire::order::LEN]);
        }
    }
});
