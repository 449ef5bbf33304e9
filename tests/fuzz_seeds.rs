//! Replays every committed fuzz seed through the fuzz targets' own entry points, so CI catches a
//! regression on an input the fuzzer once found, without running a fuzzer.

use std::path::Path;

use botlist::fuzzing::TARGETS;

#[test]
fn every_fuzz_seed_passes_its_target() {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    for (name, target) in TARGETS {
        let dir = seeds.join(name);
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let mut count = 0;
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let data = std::fs::read(&path).expect("a readable seed");
            target(&data);
            count += 1;
        }
        assert!(count > 0, "{name} has no seeds");
    }
}
