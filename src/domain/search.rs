//! `GET /bots`: the query string, the filters and the ranking (docs/API.md, `GET /bots`).

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use super::bot::BotView;
use super::ids::BotId;
use super::text::fold_case;
use super::time::{Month, Timestamp};

pub const DEFAULT_LIMIT: u64 = 24;
pub const MAX_LIMIT: u64 = 100;
pub const MAX_QUERY_CHARS: usize = 256;
/// The deepest page end (`offset + limit`) of a search with a filter. Without a filter a page
/// at any depth costs what the first does (the order jumps to it); with one, finding the
/// page's start costs in proportion to it (a walk of the order, or a ranking of the matches).
/// At 10,000 the dearest such page, at the walk-or-rank crossover, walks about 55,000 places at
/// 1,000,000 bots: an estimate, not yet timed (`cargo bench --bench worst` times it; docs/SEARCH.md,
/// "What a search may cost").
pub const MAX_FILTERED_END: u64 = 10_000;

/// Declares the sort orders: each row is a [`Sort`] variant, its name in `sort=`, what it ranks
/// by (for the API's reference, empty when the name says it) and its key, from a bot and the
/// month the monthly count is read in. The enum, [`Sort::ALL`], parsing, the names the API
/// documents and the key both rankings use (the index's, and [`Search::run`] that the tests
/// hold it to) are all made from the rows, so a new order is one row.
macro_rules! sort_orders {
    ($(
        $(#[$doc:meta])*
        $sort:ident = $name:literal, $about:literal, |$bot:pat_param, $month:pat_param| $key:expr;
    )*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Sort {
            $($(#[$doc])* $sort,)*
        }

        impl Sort {
            pub const ALL: [Sort; [$(Sort::$sort),*].len()] = [$(Sort::$sort),*];

            /// Its value of the `sort` parameter.
            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$sort => $name,)*
                }
            }

            /// What it ranks by, for the reference; empty when its name says it.
            pub fn about(self) -> &'static str {
                match self {
                    $(Self::$sort => $about,)*
                }
            }

            /// The key bots are ranked by, descending, with monthly counts read in `month`.
            /// Exact: counts and milliseconds (which may be before 1970) as they are.
            pub fn key(self, bot: &BotView, month: Month) -> i128 {
                match self {
                    $(Self::$sort => {
                        let $bot = bot;
                        let $month = month;
                        $key
                    })*
                }
            }
        }
    };
}

sort_orders! {
    Votes = "votes", "vote_count", |bot, _| bot.vote_count.into();
    Newest = "newest", "created_at", |bot, _| bot.listing.created_at.millis().into();
    MonthlyVotes = "monthly_votes", "", |bot, month| bot.monthly.in_month(month).into();
    RecentlyUpdated = "recently_updated", "last listing edit or stats post",
        |bot, _| bot.updated_at.millis().into();
    Invites = "invites", "server_count", |bot, _| bot.servers().into();
}

/// `sort=relevance`: with a `q`, ranks by how well the name matches it (see
/// [`relevance_class`]) rather than by a key of the table; without one it is the default order.
pub const RELEVANCE: &str = "relevance";

impl Sort {
    /// The order without a `sort` parameter.
    pub const DEFAULT: Sort = Sort::Votes;

    /// This sort's place in [`Sort::ALL`].
    pub fn position(self) -> usize {
        self as usize
    }

    fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|sort| sort.name() == text)
    }

    /// The names, for a message that lists them.
    fn names() -> String {
        Self::ALL.map(Self::name).join(", ")
    }
}

/// Server-count buckets of the `invites` filter, half-open ranges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invites {
    Under100,
    From100To1000,
    From1000To10000,
    Over10000,
}

impl Invites {
    const NAMES: &'static str = "lt100, 100-1000, 1000-10000, gt10000";

    pub const ALL: [Invites; 4] = [
        Self::Under100,
        Self::From100To1000,
        Self::From1000To10000,
        Self::Over10000,
    ];

    /// This bucket's place in [`Invites::ALL`].
    pub fn position(self) -> usize {
        self as usize
    }

    /// The bucket a server count falls in.
    pub fn of(servers: u64) -> Self {
        match servers {
            0..100 => Self::Under100,
            100..1000 => Self::From100To1000,
            1000..10000 => Self::From1000To10000,
            _ => Self::Over10000,
        }
    }

    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "lt100" => Self::Under100,
            "100-1000" => Self::From100To1000,
            "1000-10000" => Self::From1000To10000,
            "gt10000" => Self::Over10000,
            _ => return None,
        })
    }

    fn contains(self, servers: u64) -> bool {
        match self {
            Self::Under100 => servers < 100,
            Self::From100To1000 => (100..1000).contains(&servers),
            Self::From1000To10000 => (1000..10000).contains(&servers),
            Self::Over10000 => servers >= 10000,
        }
    }
}

/// A parsed, valid search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Search {
    pub text: Option<String>,
    pub tags: Option<HashSet<String>>,
    pub languages: Option<HashSet<String>>,
    pub invites: Option<Invites>,
    pub min_votes: Option<u64>,
    pub sort: Sort,
    pub limit: u64,
    pub offset: u64,
    /// `match=words`: each whitespace-separated word of `q` (folded) must occur in the name or
    /// the short description, in any order; `text` is then `None`.
    pub words: Option<Vec<String>>,
    /// `sort=relevance` with a `q`: the folded `q`, by which matches are ranked (see
    /// [`relevance_class`]), then by `vote_count`; `sort` is then `Votes`, which relevance
    /// falls back to without a `q`.
    pub relevance: Option<String>,
}

/// How well a folded name matches a folded `q`, best first: 0 the name is `q`, 1 the name
/// starts with it, 2 a word of the name starts with it (after a character that is not a letter
/// or digit), 3 it is anywhere in the name, 4 it is not in the name (only in the description,
/// or, with `match=words`, not as a whole).
pub fn relevance_class(name: &str, q: &str) -> u8 {
    if name == q {
        0
    } else if name.starts_with(q) {
        1
    } else if starts_a_word(name, q) {
        2
    } else if name.contains(q) {
        3
    } else {
        4
    }
}

/// Type-ahead by brute force, the statement `SearchIndex::suggest` is held to: up to `limit`
/// bots with a word of their folded name starting with the folded `q`, by `vote_count`
/// descending, then listing id ascending.
pub fn suggest_scan(
    bots: impl IntoIterator<Item = Arc<BotView>>,
    q: &str,
    limit: usize,
) -> Vec<Arc<BotView>> {
    let mut hits: Vec<Arc<BotView>> = bots
        .into_iter()
        .filter(|bot| starts_a_word(&bot.listing.search_text.name, q))
        .collect();
    hits.sort_by(|a, b| {
        b.vote_count
            .cmp(&a.vote_count)
            .then(a.listing.id.cmp(&b.listing.id))
    });
    hits.truncate(limit);
    hits
}

/// Whether a word of `name` (after a character that is not alphanumeric) starts with `q`.
/// Every place is tried, overlapping ones too: in `x   y`, `  ` starts at the third character.
pub fn starts_a_word(name: &str, q: &str) -> bool {
    if q.is_empty() {
        return false;
    }
    let mut previous: Option<char> = None;
    for (at, c) in name.char_indices() {
        if previous.is_none_or(|p| !p.is_alphanumeric()) && name[at..].starts_with(q) {
            return true;
        }
        previous = Some(c);
    }
    false
}

/// Why a query string was refused, naming the parameter.
#[derive(Debug, PartialEq, Eq)]
pub struct QueryError(pub String);

/// `sort`: an order's name; `relevance` ranks by the text and falls back to the default order.
fn parse_sort(params: &Params) -> Result<Sort, QueryError> {
    match params.get("sort") {
        None | Some(RELEVANCE) => Ok(Sort::DEFAULT),
        Some(s) => Sort::parse(s).ok_or_else(|| {
            QueryError(format!(
                "`sort` must be one of {}, got `{s}`",
                Sort::names()
            ))
        }),
    }
}

fn parse_invites(params: &Params) -> Result<Option<Invites>, QueryError> {
    params
        .get("invites")
        .map(|s| {
            Invites::parse(s).ok_or_else(|| {
                QueryError(format!(
                    "`invites` must be one of {}, got `{s}`",
                    Invites::NAMES
                ))
            })
        })
        .transpose()
}

/// `offset`, or the start of `page`. Both are checked even when offset wins over page: a bad
/// value is never ignored.
fn parse_offset(params: &Params, limit: u64) -> Result<u64, QueryError> {
    let page = match params.get("page") {
        None => None,
        Some(s) => match parse_count("page", s, false)? {
            0 => return Err(QueryError("`page` must be 1 or more".into())),
            page => Some(page),
        },
    };
    match (params.get("offset"), page) {
        (Some(s), _) => parse_count("offset", s, false),
        (None, Some(page)) => Ok((page - 1).saturating_mul(limit)),
        (None, None) => Ok(0),
    }
}

/// `match`: whether `q` is whole words (`words`) or a substring (the default).
fn parse_match(params: &Params) -> Result<bool, QueryError> {
    match params.get("match") {
        None | Some("substring") => Ok(false),
        Some("words") => Ok(true),
        Some(other) => Err(QueryError(format!(
            "`match` must be `substring` or `words`, got `{other}`"
        ))),
    }
}

/// What the folded `q` is looked for as: a substring, or a set of words; and the text
/// relevance ranks by, when asked.
fn needles(
    text: Option<String>,
    by_words: bool,
    relevance: bool,
) -> (Option<String>, Option<Vec<String>>, Option<String>) {
    let text = text.filter(|q| !q.is_empty());
    let relevance = text
        .as_ref()
        .filter(|_| relevance)
        .map(|q| {
            if by_words {
                q.trim().to_owned()
            } else {
                q.clone()
            }
        })
        .filter(|q| !q.is_empty());
    match text {
        Some(q) if by_words => {
            let mut words: Vec<String> = q.split_whitespace().map(str::to_owned).collect();
            words.sort_unstable();
            words.dedup();
            (None, (!words.is_empty()).then_some(words), relevance)
        }
        text => (text, None, relevance),
    }
}

const KNOWN: &[&str] = &[
    "q", "query", "category", "tags", "language", "langs", "invites", "votes", "sort", "limit",
    "offset", "page", "match",
];

impl Search {
    pub fn parse(query_string: &str) -> Result<Self, QueryError> {
        let params = Params::parse(query_string)?;
        let text = match params.get_aliased("q", "query") {
            Some((name, q)) if q.chars().count() > MAX_QUERY_CHARS => {
                return Err(QueryError(format!(
                    "`{name}` must be at most {MAX_QUERY_CHARS} characters"
                )))
            }
            Some((_, q)) => Some(fold_case(q)),
            None => None,
        };
        let relevance = params.get("sort") == Some(RELEVANCE);
        // In this order, so that of two bad parameters the same one is named as always.
        let sort = parse_sort(&params)?;
        let invites = parse_invites(&params)?;
        let limit = match params.get("limit") {
            None => DEFAULT_LIMIT,
            Some(s) => parse_count("limit", s, true)?.min(MAX_LIMIT),
        };
        let offset = parse_offset(&params, limit)?;
        let by_words = parse_match(&params)?;
        let (text, words, relevance) = needles(text, by_words, relevance);
        let search = Self {
            words,
            relevance,
            text,
            tags: list(params.get_aliased("category", "tags")),
            languages: list(params.get_aliased("language", "langs")),
            invites,
            min_votes: params
                .get("votes")
                .map(|s| parse_count("votes", s, false))
                .transpose()?,
            sort,
            limit,
            offset,
        };
        search.check_depth()?;
        Ok(search)
    }

    /// Whether any filter narrows the bots (an empty `q`, `votes=0` and no list do not).
    pub fn has_filter(&self) -> bool {
        self.text.is_some()
            || self.words.is_some()
            || self.tags.is_some()
            || self.languages.is_some()
            || self.invites.is_some()
            || self.min_votes.is_some_and(|min| min > 0)
    }

    /// A filtered page may not end past [`MAX_FILTERED_END`]: its cost grows with its depth.
    fn check_depth(&self) -> Result<(), QueryError> {
        let end = self.offset.saturating_add(self.limit);
        // `limit=0` asks only for the total, which costs nothing more at any offset.
        if self.has_filter() && self.limit > 0 && end > MAX_FILTERED_END {
            return Err(QueryError(format!(
                "`offset` + `limit` must be at most {MAX_FILTERED_END} when `q`, `category`, \
                 `language`, `invites` or `votes` narrows the search (got {end}): a deeper page \
                 of a filtered search costs in proportion to its depth; narrow the filters \
                 instead (without a filter any depth is allowed)"
            )));
        }
        Ok(())
    }
    /// Whether `bot` passes every filter of this search.
    pub fn matches(&self, bot: &BotView) -> bool {
        let listing = &*bot.listing;
        if let Some(text) = &self.text {
            let found = listing.search_text.name.contains(text.as_str())
                || listing
                    .search_text
                    .short_description
                    .contains(text.as_str());
            if !found {
                return false;
            }
        }
        if let Some(words) = &self.words {
            let text = &listing.search_text;
            let all = words.iter().all(|word| {
                text.name.contains(word.as_str()) || text.short_description.contains(word.as_str())
            });
            if !all {
                return false;
            }
        }
        if let Some(tags) = &self.tags {
            if !listing.tags.iter().any(|t| tags.contains(t.as_str())) {
                return false;
            }
        }
        if let Some(languages) = &self.languages {
            let speaks = listing
                .language_code
                .as_ref()
                .is_some_and(|code| languages.contains(code.as_str()));
            if !speaks {
                return false;
            }
        }
        if let Some(bucket) = self.invites {
            if !bucket.contains(bot.servers()) {
                return false;
            }
        }
        self.min_votes.is_none_or(|min| bot.vote_count >= min)
    }

    /// The rules of a search applied by brute force: filters every bot, ranks the matches and
    /// cuts one page (featured first, then the sort key descending, then the listing id
    /// ascending). The service answers from the index in `crate::index`; this is the plain
    /// statement of what the index must return, and the tests hold the index to it.
    pub fn run(&self, bots: impl IntoIterator<Item = Arc<BotView>>, now: Timestamp) -> SearchPage {
        let mut hits: Vec<Ranked> = bots
            .into_iter()
            .filter(|bot| self.matches(bot))
            .map(|bot| Ranked {
                featured: bot.listing.featured,
                key: match &self.relevance {
                    // Better classes first, then more votes.
                    Some(q) => {
                        let class = relevance_class(&bot.listing.search_text.name, q);
                        (i128::from(4 - class) << 64) | i128::from(bot.vote_count)
                    }
                    None => self.sort.key(&bot, now.month()),
                },
                id: bot.listing.id,
                bot,
            })
            .collect();
        let total = hits.len() as u64;
        let end = self.offset.saturating_add(self.limit).min(total) as usize;
        let start = (self.offset.min(total)) as usize;
        if end < hits.len() {
            if end > 0 {
                hits.select_nth_unstable_by(end - 1, Ranked::order);
            }
            hits.truncate(end);
        }
        hits.sort_unstable_by(Ranked::order);
        SearchPage {
            total,
            bots: hits.drain(start..).map(|hit| hit.bot).collect(),
            work: Work::default(),
        }
    }
}

pub struct SearchPage {
    pub total: u64,
    pub bots: Vec<Arc<BotView>>,
    /// What finding the page took, counted (the brute-force [`Search::run`] counts nothing).
    pub work: Work,
}

/// The work a search or a type-ahead did, counted instead of timed, so that a test can hold
/// each worst case to its bound on a machine of any speed or load (`tests/search_work.rs`).
/// Each unit costs roughly the same: tens of nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Places of a maintained order stepped over or read.
    pub visited: u64,
    /// Documents read one by one: ranked by a selection, or their text verified or classified.
    pub read: u64,
    /// Bitmap cells combined: 64-bit words of dense containers, entries of sparse ones.
    pub postings: u64,
}

impl Work {
    pub fn total(&self) -> u64 {
        self.visited + self.read + self.postings
    }
}

struct Ranked {
    featured: bool,
    key: i128,
    id: BotId,
    bot: Arc<BotView>,
}

impl Ranked {
    fn order(a: &Ranked, b: &Ranked) -> Ordering {
        b.featured
            .cmp(&a.featured)
            .then(b.key.cmp(&a.key))
            .then(a.id.cmp(&b.id))
    }
}

/// A count parameter: ASCII digits only, so `+5`, `-1`, `1.5` and `1e3` are all refused.
/// `limit` is clamped, so any number of digits is fine there; elsewhere it must fit in a u64.
fn parse_count(name: &str, text: &str, clamp: bool) -> Result<u64, QueryError> {
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(QueryError(format!(
            "`{name}` must be a whole number of 0 or more, got `{text}`"
        )));
    }
    match text.parse::<u64>() {
        Ok(n) => Ok(n),
        Err(_) if clamp => Ok(u64::MAX),
        Err(_) => Err(QueryError(format!("`{name}` is too large, got `{text}`"))),
    }
}

fn list(param: Option<(&str, &str)>) -> Option<HashSet<String>> {
    let set: HashSet<String> = param?
        .1
        .split(',')
        .map(|item| item.trim().to_lowercase())
        .filter(|item| !item.is_empty())
        .collect();
    (!set.is_empty()).then_some(set)
}

/// The known parameters of a query string, each at most once; empty values count as absent.
struct Params(Vec<(String, String)>);

impl Params {
    fn parse(query_string: &str) -> Result<Self, QueryError> {
        let mut params: Vec<(String, String)> = Vec::new();
        let pairs = super::query::pairs(query_string).map_err(|e| QueryError(e.0))?;
        for (name, value) in pairs {
            if !KNOWN.contains(&&*name) {
                continue;
            }
            if params.iter().any(|(seen, _)| *seen == name) {
                return Err(QueryError(format!("`{name}` is given more than once")));
            }
            params.push((name.into_owned(), value.into_owned()));
        }
        Ok(Self(params))
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, v)| n == name && !v.is_empty())
            .map(|(_, v)| v.as_str())
    }

    /// The canonical parameter when sent, else its alias; with the name that was used.
    fn get_aliased<'a>(&'a self, canonical: &'a str, alias: &'a str) -> Option<(&'a str, &'a str)> {
        self.get(canonical)
            .map(|v| (canonical, v))
            .or_else(|| self.get(alias).map(|v| (alias, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(query: &str) -> String {
        Search::parse(query).expect_err(query).0
    }

    #[test]
    fn a_word_start_is_found_where_it_overlaps_an_earlier_match() {
        // The property test found this: `  ` matches at 1 (after `x`, not a word start) and,
        // overlapping it, at 2 (after a space, a word start).
        assert!(starts_a_word("x   y", "  "));
        assert!(!starts_a_word("x  y", "  "));
        assert!(starts_a_word("ab-ab", "ab"));
        assert!(starts_a_word("xaa-aa", "aa"));
        assert!(!starts_a_word("xaaa", "aa"));
        assert!(!starts_a_word("any", ""));
    }

    #[test]
    fn defaults() {
        let s = Search::parse("").expect("valid");
        assert_eq!((s.sort, s.limit, s.offset), (Sort::Votes, 24, 0));
        assert!(s.text.is_none() && s.tags.is_none() && s.languages.is_none());
    }

    #[test]
    fn paging_rules() {
        let s = Search::parse("limit=500&page=3").expect("valid");
        assert_eq!((s.limit, s.offset), (100, 200));
        let s = Search::parse("limit=10&page=3&offset=4").expect("valid");
        assert_eq!(s.offset, 4, "offset wins over page");
        let s = Search::parse("limit=99999999999999999999999").expect("valid");
        assert_eq!(s.limit, 100);
        assert!(err("page=0").contains("page"));
        assert!(err("offset=-1").contains("offset"));
        assert!(err("limit=1.5").contains("limit"));
        assert!(err("limit=+5").contains("limit"));
        assert!(err("votes=1e3").contains("votes"));
    }

    #[test]
    fn a_filtered_page_ends_by_the_window() {
        assert!(Search::parse("q=a&offset=9900&limit=100").is_ok());
        assert!(
            Search::parse("offset=999999999&limit=100").is_ok(),
            "no filter"
        );
        assert!(
            Search::parse("votes=0&offset=20000").is_ok(),
            "votes=0 is no filter"
        );
        assert!(
            Search::parse("q=a&offset=20000&limit=0").is_ok(),
            "only the total"
        );
        for query in [
            "q=a&offset=9901&limit=100",
            "category=music&page=101&limit=100",
            "language=de&offset=10000",
            "invites=lt100&offset=10000",
            "votes=1&offset=10000",
            "q=a+b&match=words&sort=relevance&offset=10000",
            "q=a&page=99999999999",
        ] {
            let message = err(query);
            assert!(message.contains("`offset` + `limit`"), "{query}: {message}");
        }
    }

    #[test]
    fn aliases_and_duplicates() {
        let s = Search::parse("tags=a&category=B,%20c,,").expect("valid");
        assert_eq!(
            s.tags,
            Some(["b".to_string(), "c".to_string()].into_iter().collect())
        );
        let s = Search::parse("query=Foo").expect("valid");
        assert_eq!(s.text.as_deref(), Some("foo"));
        assert!(err("sort=votes&sort=newest").contains("sort"));
        assert!(err("sort=best").contains("sort"));
        assert!(err("invites=many").contains("invites"));
        assert!(err(&format!("q={}", "x".repeat(257))).contains('q'));
        assert!(Search::parse("unknown=1&unknown=2").is_ok());
    }
}
