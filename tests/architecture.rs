//! The house rules of docs/ARCHITECTURE.md that a reader can check by reading imports: no
//! import cycle among `src`'s top-level modules, and the floors that must not reach up.
//!
//! The import graph is read the plain way: every `crate::name` of each file under `src/`
//! (grouped `crate::{a, b}` imports count each name), comments left out, and each file read
//! only up to its first `#[cfg(test)]`, since tests may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module -> (imported module -> the first file that imports it).
type Graph = BTreeMap<String, BTreeMap<String, PathBuf>>;

fn graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph = Graph::new();
    let mut files = Vec::new();
    walk(&src, &mut files);
    files.sort();
    for file in files {
        let relative = file.strip_prefix(&src).expect("under src");
        let mut parts = relative.iter();
        let first = parts.next().expect("a path").to_string_lossy().into_owned();
        let top = if parts.next().is_some() {
            first
        } else {
            first.trim_end_matches(".rs").to_owned()
        };
        let text = std::fs::read_to_string(&file).expect("a source file");
        let imports = graph.entry(top.clone()).or_default();
        for name in crate_names(&text) {
            if name != top {
                imports
                    .entry(name)
                    .or_insert_with(|| relative.to_path_buf());
            }
        }
    }
    graph
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a readable directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            walk(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// The top-level names a file takes through `crate::`, outside its tests and comments.
fn crate_names(text: &str) -> BTreeSet<String> {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    let code: String = text
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut names = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        let after = &rest[at + "crate::".len()..];
        rest = after;
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = after.strip_prefix('{') {
            let group = group.split('}').next().unwrap_or("");
            names.extend(group.split(',').map(identifier).filter(|n| !n.is_empty()));
        } else {
            let name = identifier(after);
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}

/// The identifier `text` starts with, after any whitespace.
fn identifier(text: &str) -> String {
    text.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// A path of imports from `from` to `to`, if there is one.
fn path(graph: &Graph, from: &str, to: &str) -> Option<Vec<String>> {
    let mut came_from: BTreeMap<String, String> = BTreeMap::new();
    let mut todo = vec![from.to_owned()];
    let mut seen = BTreeSet::from([from.to_owned()]);
    while let Some(module) = todo.pop() {
        for next in graph.get(&module).into_iter().flat_map(BTreeMap::keys) {
            if !seen.insert(next.clone()) {
                continue;
            }
            came_from.insert(next.clone(), module.clone());
            if next == to {
                let mut path = vec![to.to_owned()];
                while let Some(previous) = came_from.get(path.last().expect("not empty")) {
                    path.push(previous.clone());
                }
                path.reverse();
                return Some(path);
            }
            todo.push(next.clone());
        }
    }
    None
}

/// Each step of a cycle with the file that takes it.
fn describe(graph: &Graph, cycle: &[String]) -> String {
    cycle
        .windows(2)
        .map(|step| {
            let file = &graph[&step[0]][&step[1]];
            format!("{} -> {} (src/{})", step[0], step[1], file.display())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn no_import_cycle_among_top_level_modules() {
    let graph = graph();
    let mut cycles = BTreeSet::new();
    for (module, imports) in &graph {
        for imported in imports.keys() {
            if let Some(back) = path(&graph, imported, module) {
                // Each cycle once, from its first module in name order.
                let mut cycle = vec![module.clone()];
                cycle.extend(back);
                cycle.pop();
                let first = (0..cycle.len()).min_by_key(|&i| &cycle[i]).unwrap_or(0);
                cycle.rotate_left(first);
                cycle.push(cycle[0].clone());
                cycles.insert(describe(&graph, &cycle));
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "import cycles among src's top-level modules:\n{}",
        cycles.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// The imports of `module` among `forbidden`, with the files that take them.
fn reaching(graph: &Graph, module: &str, forbidden: &[&str]) -> Vec<String> {
    graph
        .get(module)
        .into_iter()
        .flatten()
        .filter(|(imported, _)| forbidden.contains(&imported.as_str()))
        .map(|(imported, file)| format!("{module} -> {imported} (src/{})", file.display()))
        .collect()
}

#[test]
fn the_lower_floors_never_import_the_upper_ones() {
    let graph = graph();
    let mut found = Vec::new();
    for lower in [
        "domain", "persist", "index", "webhooks", "actors", "cluster", "config",
    ] {
        found.extend(reaching(&graph, lower, &["api", "startup"]));
    }
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn the_cluster_core_knows_neither_the_api_nor_start_up() {
    let found = reaching(&graph(), "cluster", &["api", "startup"]);
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn config_imports_neither_the_api_nor_the_cluster() {
    let found = reaching(&graph(), "config", &["api", "cluster", "startup"]);
    assert!(found.is_empty(), "{found:#?}");
}

/// Handlers touch no file: what they need of the disk (a snapshot, the cursor key) start-up
/// hands them.
#[test]
fn no_file_of_the_api_imports_persist() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src.join("api"), &mut files);
    let found: Vec<String> = files
        .iter()
        .filter(|file| {
            let text = std::fs::read_to_string(file).expect("a source file");
            crate_names(&text).contains("persist")
        })
        .map(|file| file.display().to_string())
        .collect();
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn the_reader_sees_what_the_house_rule_script_sees() {
    let names = crate_names(
        "use crate::a::X;\n// use crate::b;\nuse crate::{c, d::Y};\nx$crate::e;\nnotcrate::f\n\
         #[cfg(test)]\nuse crate::g;",
    );
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        ["a", "c", "d", "e"],
        "grouped imports count, comments, other words ending in crate and tests do not"
    );
    let mut graph = Graph::new();
    for (from, to) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        graph
            .entry(from.into())
            .or_default()
            .insert(to.into(), PathBuf::from(format!("{from}.rs")));
    }
    assert_eq!(path(&graph, "b", "a").expect("a cycle"), ["b", "c", "a"]);
    assert_eq!(path(&graph, "d", "a"), None);
}

/// The arms at the top level of each `match` block in `text` (comments and tests left out):
/// each block's arm starts, one line each.
fn match_blocks(text: &str) -> Vec<Vec<String>> {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or("").trim())
        .collect();
    let mut blocks = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        if !(line.starts_with("match ") || line.contains(" match ")) || !line.ends_with('{') {
            continue;
        }
        let mut depth = 1i32;
        let mut arms = Vec::new();
        for inner in &lines[at + 1..] {
            if depth == 1 && !inner.is_empty() && !inner.starts_with('}') {
                arms.push(inner.to_string());
            }
            depth += inner.matches('{').count() as i32 - inner.matches('}').count() as i32;
            if depth <= 0 {
                break;
            }
        }
        blocks.push(arms);
    }
    blocks
}

/// A record kind is decided about in every place that matches over `Record`: no such match has
/// a wildcard arm, so a new kind makes the compiler list every place (docs/ARCHITECTURE.md,
/// "Each lifecycle in one place").
#[test]
fn no_match_over_record_kinds_has_a_wildcard_arm() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let mut bypasses = Vec::new();
    let mut matches_over_records = 0;
    // A module of tests (`#[cfg(test)] mod tests;`) may match as it likes.
    files.retain(|f| f.file_name().is_some_and(|n| n != "tests.rs"));
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a source file");
        for arms in match_blocks(&text) {
            if !arms.iter().any(|arm| arm.starts_with("Record::")) {
                continue;
            }
            matches_over_records += 1;
            if arms
                .iter()
                .any(|arm| arm.starts_with("_ =>") || arm.starts_with("_ if"))
            {
                bypasses.push(
                    file.strip_prefix(&src)
                        .expect("under src")
                        .display()
                        .to_string(),
                );
            }
        }
    }
    assert!(
        matches_over_records >= 5,
        "the check found {matches_over_records} matches over Record"
    );
    assert!(
        bypasses.is_empty(),
        "a match over record kinds has a wildcard arm in {bypasses:?}"
    );
}

#[test]
fn the_record_check_sees_a_wildcard_arm() {
    let sample = "fn f(r: &Record) -> u8 {\n    match r {\n        Record::A { .. } => {\n            match x {\n                _ => 1,\n            }\n        }\n        _ => 2,\n    }\n}\n";
    let blocks = match_blocks(sample);
    let outer = blocks
        .iter()
        .find(|arms| arms.iter().any(|a| a.starts_with("Record::")))
        .expect("the outer match");
    assert!(outer.iter().any(|a| a.starts_with("_ =>")), "{outer:?}");
}
