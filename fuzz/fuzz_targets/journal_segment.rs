#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| botlist::fuzzing::journal_segment(data));
