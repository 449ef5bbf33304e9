//! The classic search's parameters (`search=field: value ...`, `sort`, `fields`, `limit`,
//! `offset`), read into the one [`Search`] `{base}` runs: the classic syntax is translated to
//! the base's parameters and parsed by [`Search::parse`], so both surfaces share every rule
//! (bounds, clamping, filters, ranking).

use crate::domain::query;
use crate::domain::search::{Search, Sort, MAX_QUERY_CHARS};

use super::render::BotField;

/// The classic API's page size when `limit` is not sent (the base's `limit` bound still holds).
pub const DEFAULT_LIMIT: &str = "50";

/// The classic names of the sort orders; the base's names are accepted too.
const SORTS: &[(&str, Sort)] = &[
    ("points", Sort::Votes),
    ("monthlyPoints", Sort::MonthlyVotes),
    ("date", Sort::Newest),
    ("server_count", Sort::Invites),
];

/// The fields `search=` may name, and the base parameter each becomes.
pub const SEARCHED: &[(&str, &str)] = &[
    ("username", "q"),
    ("name", "q"),
    ("shortdesc", "q"),
    ("tags", "category"),
    ("language", "language"),
];

const KNOWN: &[&str] = &["search", "sort", "fields", "limit", "offset"];

/// A classic search: the base's [`Search`], and the fields to show (`None`: all).
#[derive(Debug)]
pub struct ClassicSearch {
    pub search: Search,
    pub fields: Option<Vec<BotField>>,
}

/// Why a classic query was refused, naming the parameter.
pub type Refusal = String;

pub fn parse(query_string: &str) -> Result<ClassicSearch, Refusal> {
    let mut params: Vec<(String, String)> = Vec::new();
    for (name, value) in query::pairs(query_string).map_err(|e| e.0)? {
        if !KNOWN.contains(&&*name) {
            continue;
        }
        if params.iter().any(|(seen, _)| *seen == name) {
            return Err(format!("`{name}` is given more than once"));
        }
        params.push((name.into_owned(), value.into_owned()));
    }
    let get = |name: &str| {
        params
            .iter()
            .find(|(n, v)| n == name && !v.trim().is_empty())
            .map(|(_, v)| v.trim())
    };
    let mut base = form_urlencoded::Serializer::new(String::new());
    base.append_pair("limit", get("limit").unwrap_or(DEFAULT_LIMIT));
    if let Some(offset) = get("offset") {
        base.append_pair("offset", offset);
    }
    if let Some(sort) = get("sort") {
        base.append_pair("sort", sort_name(sort)?);
    }
    if let Some(search) = get("search") {
        for (name, value) in searched(search)? {
            base.append_pair(name, &value);
        }
    }
    let search = Search::parse(&base.finish()).map_err(|e| e.0)?;
    let fields = get("fields").map(fields).transpose()?;
    Ok(ClassicSearch { search, fields })
}

/// `sort`: a classic or a base name, with or without the classic `-`. Every order ranks from
/// the highest, featured bots first, as `{base}` does (docs/API.md says so).
fn sort_name(sort: &str) -> Result<&'static str, Refusal> {
    let name = sort.strip_prefix('-').unwrap_or(sort);
    SORTS
        .iter()
        .find(|(classic, _)| *classic == name)
        .map(|(_, sort)| sort.name())
        .or_else(|| {
            Sort::ALL
                .into_iter()
                .map(Sort::name)
                .find(|base| *base == name)
        })
        .ok_or_else(|| {
            let names = sort_names();
            format!(
                "`sort` must be one of {} (a leading `-` is allowed), got `{sort}`",
                names.join(", ")
            )
        })
}

/// Every name `sort` takes (without the leading `-`): the classic ones, then the base's.
pub fn sort_names() -> Vec<&'static str> {
    SORTS
        .iter()
        .map(|(classic, _)| *classic)
        .chain(Sort::ALL.map(Sort::name))
        .collect()
}

/// `fields`: comma-separated classic field names, shown in the classic shape's order.
fn fields(text: &str) -> Result<Vec<BotField>, Refusal> {
    let mut picked = Vec::new();
    for name in text
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
    {
        let field = BotField::parse(name).ok_or_else(|| {
            format!(
                "`fields` names `{name}`, which is not a field of the classic bot (one of {})",
                BotField::ALL.map(BotField::name).join(", ")
            )
        })?;
        if !picked.contains(&field) {
            picked.push(field);
        }
    }
    picked.sort_by_key(|field| BotField::ALL.iter().position(|f| f == field));
    Ok(picked)
}

/// `search`: `field: value` pairs (separated by spaces, or by commas as top.py writes them),
/// as the base's parameters. A field botlist does not search by, a field given twice, or two
/// of the text fields, is refused rather than ignored: the answer would not be what was asked.
fn searched(text: &str) -> Result<Vec<(&'static str, String)>, Refusal> {
    let mut out: Vec<(&'static str, String)> = Vec::new();
    for (field, value) in pairs(text)? {
        let Some((_, parameter)) = SEARCHED.iter().find(|(name, _)| *name == field) else {
            return Err(format!(
                "`search` names `{field}`, which botlist does not search by (one of {})",
                SEARCHED.map_names()
            ));
        };
        if out.iter().any(|(seen, _)| seen == parameter) {
            return Err(format!(
                "`search` gives `{field}` where another field already set the same filter: \
                 at most one of username, name and shortdesc, and each other field once"
            ));
        }
        if *parameter == "q" && value.chars().count() > MAX_QUERY_CHARS {
            return Err(format!(
                "`search` value of `{field}` must be at most {MAX_QUERY_CHARS} characters"
            ));
        }
        out.push((parameter, value.to_owned()));
    }
    Ok(out)
}

trait Names {
    fn map_names(&self) -> String;
}

impl Names for &[(&str, &str)] {
    fn map_names(&self) -> String {
        self.iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Where a field name starts: letters, digits and `_` ending in `:`, at the start of the text or
/// after a space or comma.
fn keys(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let starts = at == 0 || bytes[at - 1].is_ascii_whitespace() || bytes[at - 1] == b',';
        let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        if starts && word(bytes[at]) {
            let mut end = at;
            while end < bytes.len() && word(bytes[end]) {
                end += 1;
            }
            if bytes.get(end) == Some(&b':') {
                found.push((at, end));
                at = end + 1;
                continue;
            }
            at = end;
            continue;
        }
        at += 1;
    }
    found
}

/// The `field: value` pairs of `search`, each value trimmed of spaces and of the commas that
/// separate pairs.
fn pairs(text: &str) -> Result<Vec<(&str, &str)>, Refusal> {
    let keys = keys(text);
    let before = keys.first().map_or(text, |(start, _)| &text[..*start]);
    if !before
        .trim_matches(|c: char| c.is_whitespace() || c == ',')
        .is_empty()
        || keys.is_empty()
    {
        return Err(format!(
            "`search` must be `field: value` pairs, like `username: name tags: music`, got `{}`",
            text.chars().take(40).collect::<String>()
        ));
    }
    let mut out = Vec::with_capacity(keys.len());
    for (i, (start, colon)) in keys.iter().enumerate() {
        let end = keys.get(i + 1).map_or(text.len(), |(next, _)| *next);
        let value = text[colon + 1..end].trim_matches(|c: char| c.is_whitespace() || c == ',');
        let field = &text[*start..*colon];
        if out.iter().any(|(seen, _): &(&str, &str)| *seen == field) {
            return Err(format!("`search` gives `{field}` more than once"));
        }
        out.push((field, value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_pairs_are_read_as_each_library_writes_them() {
        assert_eq!(
            pairs("username: shiro certifiedBot: true").expect("pairs"),
            [("username", "shiro"), ("certifiedBot", "true")]
        );
        assert_eq!(
            pairs("username: two words, tags: music, fun").expect("pairs"),
            [("username", "two words"), ("tags", "music, fun")]
        );
        assert_eq!(pairs("a:b").expect("pairs"), [("a", "b")]);
        assert!(pairs("no pairs here").is_err());
        assert!(pairs("lead username: x").is_err());
        assert!(pairs("a: 1 a: 2").is_err());
    }

    #[test]
    fn classic_parameters_become_the_base_search() {
        let parsed =
            parse("search=username%3A+Shiro+tags%3A+music&sort=-points&limit=7&offset=2&fields=username,+id")
                .expect("parses");
        let base =
            Search::parse("q=shiro&category=music&sort=votes&limit=7&offset=2").expect("base");
        assert_eq!(parsed.search, base);
        assert_eq!(parsed.fields, Some(vec![BotField::Id, BotField::Username]));
        let defaults = parse("search=&sort=&fields=&limit=&offset=").expect("empty is absent");
        assert_eq!(defaults.search, Search::parse("limit=50").expect("base"));
        assert_eq!(defaults.fields, None);
        assert_eq!(
            parse("limit=500").expect("clamped").search.limit,
            crate::domain::search::MAX_LIMIT
        );
        for (query, names) in [
            ("sort=rank", "`sort`"),
            ("fields=id,nope", "`fields`"),
            ("search=certifiedBot%3A+true", "`search`"),
            ("search=username%3A+a+shortdesc%3A+b", "`search`"),
            ("limit=x", "`limit`"),
            ("offset=-1", "`offset`"),
            ("limit=1&limit=2", "`limit`"),
        ] {
            let why = parse(query).expect_err(query);
            assert!(why.contains(names), "{query}: {why}");
        }
    }
}
