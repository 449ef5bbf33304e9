#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| botlist::fuzzing::json_body(data));
