#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| botlist::fuzzing::snapshot_file(data));
