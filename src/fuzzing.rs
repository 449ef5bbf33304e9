//! Entry points for the fuzz targets in `fuzz/`, also run over the committed seeds by
//! `cargo test` (tests/fuzz_seeds.rs), so a regression shows up without a fuzzer.
//!
//! Each takes arbitrary bytes and must return without panicking, whatever they are.

use std::path::Path;

use crate::api::admin::VotePost;
use crate::api::extract::{parse_json, snowflake_param};
use crate::api::stats::StatsPost;
use crate::domain::bot::{BotPatch, NewBot};
use crate::domain::ids::{BotId, ProfileId, Snowflake};
use crate::domain::profile::{NewProfile, ProfilePatch};
use crate::domain::search::Search;
use crate::persist::{journal, snapshot};

/// The `GET /bots` query string.
pub fn search_query(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(search) = Search::parse(&text) {
        assert!(search.limit <= crate::domain::search::MAX_LIMIT);
    }
}

/// Every JSON request body; the first byte picks which.
pub fn json_body(data: &[u8]) {
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    let refusal = match which % 6 {
        0 => parse_json::<StatsPost>(body).err(),
        1 => parse_json::<NewBot>(body).err(),
        2 => parse_json::<BotPatch>(body).err(),
        3 => parse_json::<NewProfile>(body).err(),
        4 => parse_json::<ProfilePatch>(body).err(),
        _ => parse_json::<VotePost>(body).err(),
    };
    let is_object = body
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{');
    assert!(is_object || refusal.is_some(), "only an object is a body");
    if let Some(error) = refusal {
        let message = error.message();
        // serde's own words for types: the API says what a field must be instead. A message
        // may quote the client's own text (an unknown field's name), which may hold anything.
        let sent = String::from_utf8_lossy(body);
        for rust in [
            "struct ",
            "expected u8",
            "expected u16",
            "expected u32",
            "expected u64",
            "expected i64",
            "expected usize",
            "sequence",
            "a map",
            "enum ",
        ] {
            assert!(!message.contains(rust) || sent.contains(rust), "{message}");
        }
    }
}

/// Path ids (UUID or snowflake) and the `userId` query parameter.
pub fn ids(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Some(snowflake) = Snowflake::parse(&text) {
        assert_eq!(
            snowflake.to_string(),
            text,
            "a snowflake prints as it was parsed"
        );
    }
    if let Some(id) = BotId::parse(&text) {
        assert_eq!(id.to_string(), text.to_lowercase());
    }
    let _ = ProfileId::parse(&text);
    let _ = snowflake_param(&text, "userId");
}

/// A snapshot file: as it comes, and behind a valid header, so the fuzzer's bytes also reach the
/// MessagePack decoder that the checksum would otherwise guard.
pub fn snapshot_file(data: &[u8]) {
    let _ = snapshot::decode(data);
    let _ = snapshot::decode(&snapshot::wrap(0, data));
}

/// Between the parts of one `journal_segment` input. A short MessagePack record reaches a new
/// decoder branch by a single marker byte, so a corpus of one record per input needs thousands
/// of files that each add one edge; one input holding many parts keeps that coverage in a few.
/// `0xc1` is never used by MessagePack, so no well-formed record holds the separator.
pub const JOURNAL_PART_SEPARATOR: &[u8] = b"\xc1\xc1botlist-part\xc1\xc1";

/// Journal segments: each part of the input (see [`JOURNAL_PART_SEPARATOR`]) as it comes, and
/// as the payload of a well-framed record.
pub fn journal_segment(data: &[u8]) {
    let mut rest = data;
    while let Some(at) = memchr::memmem::find(rest, JOURNAL_PART_SEPARATOR) {
        journal_part(&rest[..at]);
        rest = &rest[at + JOURNAL_PART_SEPARATOR.len()..];
    }
    journal_part(rest);
}

fn journal_part(data: &[u8]) {
    let path = Path::new("journal-00000000000000000001.log");
    let _ = journal::scan_segment(path, data);
    let mut segment = journal::segment_header(1);
    segment.extend_from_slice(&journal::frame(1, data));
    let _ = journal::scan_segment(path, &segment);
}

/// A fuzz entry point.
pub type Target = fn(&[u8]);

/// The targets by name, as `fuzz/seeds/<name>/` calls them.
pub const TARGETS: &[(&str, Target)] = &[
    ("search_query", search_query),
    ("json_body", json_body),
    ("ids", ids),
    ("snapshot_file", snapshot_file),
    ("journal_segment", journal_segment),
];
