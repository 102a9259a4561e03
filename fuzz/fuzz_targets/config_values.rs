//! Any bytes as a `LOCKSCOPE_*_MS` value: it parses to a positive threshold or gives an error
//! that names the variable; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockscope_detector::config::parse_ms;

fuzz_target!(|data: &[u8]| {
    let value = String::from_utf8_lossy(data);
    match parse_ms("LOCKSCOPE_LEAK_MS", &value) {
        Ok(d) => assert!(!d.is_zero()),
        Err(e) => assert!(e.to_string().contains("LOCKSCOPE_LEAK_MS")),
    }
});
