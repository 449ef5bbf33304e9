//! README badges: a flat SVG with a label on the left and a value on the right, in the style
//! people know from shields.io, fitted to its text.

mod widths;

use std::fmt::Write;

/// What a badge shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadgeKind {
    Servers,
    Votes,
    MonthlyVotes,
}

impl BadgeKind {
    pub const ALL: [BadgeKind; 3] = [Self::Servers, Self::Votes, Self::MonthlyVotes];

    /// From the file name's stem: `servers`, `votes` or `monthly_votes`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Servers => "servers",
            Self::Votes => "votes",
            Self::MonthlyVotes => "monthly_votes",
        }
    }

    /// The label when none is asked for: the kind's name as words.
    pub fn default_label(self) -> &'static str {
        match self {
            Self::Servers => "servers",
            Self::Votes => "votes",
            Self::MonthlyVotes => "monthly votes",
        }
    }
}

/// `flat` (rounded, with a light gradient and text shadow) or `flat-square`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BadgeStyle {
    #[default]
    Flat,
    FlatSquare,
}

impl BadgeStyle {
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "flat" => Ok(Self::Flat),
            "flat-square" => Ok(Self::FlatSquare),
            other => Err(format!(
                "`style` must be `flat` or `flat-square`, got `{}`",
                quoted(other)
            )),
        }
    }
}

/// The named colours, as shields.io names them.
pub const NAMED_COLORS: [(&str, &str); 16] = [
    ("brightgreen", "#4c1"),
    ("green", "#97ca00"),
    ("yellowgreen", "#a4a61d"),
    ("yellow", "#dfb317"),
    ("orange", "#fe7d37"),
    ("red", "#e05d44"),
    ("blue", "#007ec6"),
    ("lightgrey", "#9f9f9f"),
    ("lightgray", "#9f9f9f"),
    ("grey", "#555"),
    ("gray", "#555"),
    ("success", "#4c1"),
    ("important", "#fe7d37"),
    ("critical", "#e05d44"),
    ("informational", "#007ec6"),
    ("inactive", "#9f9f9f"),
];

/// The value side's colour: `#` and 3 or 6 hex digits, lowercase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadgeColor(String);

impl Default for BadgeColor {
    fn default() -> Self {
        Self("#007ec6".into())
    }
}

impl BadgeColor {
    /// 3 or 6 hex digits without `#`, or a name of [`NAMED_COLORS`] (any case).
    pub fn parse(text: &str) -> Result<Self, String> {
        let lower = text.to_ascii_lowercase();
        if let Some((_, hex)) = NAMED_COLORS.iter().find(|(name, _)| *name == lower) {
            return Ok(Self((*hex).into()));
        }
        if matches!(lower.len(), 3 | 6) && lower.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(Self(format!("#{lower}")));
        }
        Err(format!(
            "`color` must be 3 or 6 hex digits without `#` (like `4c1` or `007ec6`) or a colour \
             name (brightgreen, green, yellowgreen, yellow, orange, red, blue, lightgrey, grey, \
             success, important, critical, informational, inactive), got `{}`",
            quoted(text)
        ))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether white text would be hard to read on it (as shields.io decides, by brightness).
    fn is_light(&self) -> bool {
        let digits: Vec<u32> = self.0[1..].chars().filter_map(|c| c.to_digit(16)).collect();
        let (r, g, b) = match digits[..] {
            [r, g, b] => (r * 17, g * 17, b * 17),
            [r1, r2, g1, g2, b1, b2] => (r1 * 16 + r2, g1 * 16 + g2, b1 * 16 + b2),
            _ => return false,
        };
        (r * 299 + g * 587 + b * 114) > 690 * 255
    }
}

/// Labels longer than this are refused: a badge is a few words.
pub const MAX_LABEL_CHARS: usize = 64;

/// The label as asked for: any text of at most [`MAX_LABEL_CHARS`] characters without control
/// characters (which XML cannot carry).
pub fn parse_label(text: &str) -> Result<String, String> {
    if text.chars().count() > MAX_LABEL_CHARS {
        return Err(format!(
            "`label` must be at most {MAX_LABEL_CHARS} characters"
        ));
    }
    if text.chars().any(char::is_control) {
        return Err("`label` must not hold control characters".into());
    }
    Ok(text.to_owned())
}

fn quoted(text: &str) -> String {
    text.chars().take(40).filter(|c| !c.is_control()).collect()
}

/// A count as badges show it: `999`, `1.2k`, `12.3k`, `123k`, `1.5M` (one decimal below 100 of
/// a unit, none when it is 0).
pub fn metric(n: u64) -> String {
    const UNITS: [&str; 6] = ["k", "M", "G", "T", "P", "E"];
    if n < 1000 {
        return n.to_string();
    }
    let mut unit = 0;
    let mut scale: u128 = 1000;
    while u128::from(n) >= scale * 1000 && unit + 1 < UNITS.len() {
        scale *= 1000;
        unit += 1;
    }
    loop {
        let tenths = (u128::from(n) * 10 + scale / 2) / scale;
        if tenths >= 10_000 && unit + 1 < UNITS.len() {
            scale *= 1000;
            unit += 1;
            continue;
        }
        return if tenths < 1000 {
            if tenths.is_multiple_of(10) {
                format!("{}{}", tenths / 10, UNITS[unit])
            } else {
                format!("{}.{}{}", tenths / 10, tenths % 10, UNITS[unit])
            }
        } else {
            let whole = (u128::from(n) + scale / 2) / scale;
            if whole >= 1000 && unit + 1 < UNITS.len() {
                format!("1{}", UNITS[unit + 1])
            } else {
                format!("{whole}{}", UNITS[unit])
            }
        };
    }
}

/// The width of `text` at Verdana 11px (the table's font), in hundredths of a pixel.
pub fn text_width(text: &str) -> u64 {
    text.chars()
        .map(|c| {
            let code = u32::from(c);
            let found = widths::WIDTHS.binary_search_by(|&(first, last, _)| {
                if last < code {
                    std::cmp::Ordering::Less
                } else if first > code {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            });
            u64::from(match found {
                Ok(at) => widths::WIDTHS[at].2,
                Err(_) => widths::FALLBACK,
            })
        })
        .sum()
}

/// Text escaped for XML character data and attribute values; characters XML 1.0 cannot carry
/// at all (controls but tab, newline and return; unpaired surrogates cannot occur in a `str`;
/// U+FFFE and U+FFFF) are left out.
pub fn escape_xml(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(' '),
            c if c.is_control() || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
}

/// Everything a badge is drawn from.
#[derive(Clone, Debug)]
pub struct Badge<'a> {
    pub label: &'a str,
    pub value: &'a str,
    pub color: &'a BadgeColor,
    pub style: BadgeStyle,
    /// What screen readers and the tooltip say, before `label: value` (the bot's name).
    pub title: &'a str,
}

/// Space on each side of a text, in pixels.
const PADDING: u64 = 5;

/// A text's part: its width in whole pixels with the padding, and its text width in tenths of
/// a pixel for `textLength` (SVG coordinates are scaled by 0.1 for sharper text, as shields.io
/// does).
fn part(text: &str) -> (u64, u64) {
    if text.is_empty() {
        return (0, 0);
    }
    let hundredths = text_width(text);
    let pixels = hundredths.div_ceil(100);
    (pixels + 2 * PADDING, hundredths.div_ceil(10))
}

impl Badge<'_> {
    pub fn render(&self) -> String {
        let (label_width, label_length) = part(self.label);
        let (value_width, value_length) = part(self.value);
        let width = label_width + value_width;
        let title = self.title();
        let mut label = String::new();
        escape_xml(self.label, &mut label);
        let mut value = String::new();
        escape_xml(self.value, &mut value);
        let (text_fill, shadow_fill) = if self.color.is_light() {
            ("#333", "#ccc")
        } else {
            ("#fff", "#010101")
        };
        let flat = self.style == BadgeStyle::Flat;

        let mut svg = String::with_capacity(1200);
        // Writing to a String cannot fail.
        let _ = write!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="20" role="img" aria-label="{title}"><title>{title}</title>"#
        );
        self.background(&mut svg, label_width, value_width);
        svg.push_str(r##"</g><g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" text-rendering="geometricPrecision" font-size="110">"##);
        if label_width > 0 {
            text(
                &mut svg,
                flat,
                label_width * 5,
                label_length,
                &label,
                "#fff",
                "#010101",
            );
        }
        text(
            &mut svg,
            flat,
            label_width * 10 + value_width * 5,
            value_length,
            &value,
            text_fill,
            shadow_fill,
        );
        svg.push_str("</g></svg>");
        svg
    }

    /// What the badge says to a screen reader, escaped: the title, the label and the value.
    fn title(&self) -> String {
        let mut title = String::new();
        escape_xml(self.title, &mut title);
        if !title.is_empty() {
            title.push_str(" \u{b7} ");
        }
        if !self.label.is_empty() {
            escape_xml(self.label, &mut title);
            title.push_str(": ");
        }
        escape_xml(self.value, &mut title);
        title
    }

    /// The group of the two boxes, left open for the texts: the flat style's rounded corners
    /// and gradient, or square edges.
    fn background(&self, svg: &mut String, label_width: u64, value_width: u64) {
        let width = label_width + value_width;
        let color = self.color.as_str();
        let flat = self.style == BadgeStyle::Flat;
        if flat {
            let _ = write!(
                svg,
                r##"<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient><clipPath id="r"><rect width="{width}" height="20" rx="3" fill="#fff"/></clipPath><g clip-path="url(#r)">"##
            );
        } else {
            svg.push_str(r#"<g shape-rendering="crispEdges">"#);
        }
        if label_width > 0 {
            let _ = write!(
                svg,
                r##"<rect width="{label_width}" height="20" fill="#555"/>"##
            );
        }
        let _ = write!(
            svg,
            r#"<rect x="{label_width}" width="{value_width}" height="20" fill="{color}"/>"#
        );
        if flat {
            let _ = write!(svg, r#"<rect width="{width}" height="20" fill="url(#s)"/>"#);
        }
    }
}

/// One of the badge's texts, centred on `x` and `length` wide (both scaled by 10), over its
/// shadow in the flat style.
fn text(
    svg: &mut String,
    flat: bool,
    x: u64,
    length: u64,
    content: &str,
    fill: &str,
    shadow: &str,
) {
    if flat {
        let _ = write!(
            svg,
            r#"<text aria-hidden="true" x="{x}" y="150" fill="{shadow}" fill-opacity=".3" transform="scale(.1)" textLength="{length}">{content}</text>"#
        );
    }
    let _ = write!(
        svg,
        r#"<text x="{x}" y="140" transform="scale(.1)" fill="{fill}" textLength="{length}">{content}</text>"#
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_as_people_write_them() {
        for (n, text) in [
            (0, "0"),
            (999, "999"),
            (1000, "1k"),
            (1049, "1k"),
            (1050, "1.1k"),
            (12_345, "12.3k"),
            (99_949, "99.9k"),
            (99_950, "100k"),
            (123_456, "123k"),
            (999_499, "999k"),
            (999_500, "1M"),
            (999_999, "1M"),
            (1_500_000, "1.5M"),
            (u64::MAX, "18.4E"),
        ] {
            assert_eq!(metric(n), text, "{n}");
        }
    }

    #[test]
    fn widths_come_from_the_table_and_grow_with_the_text() {
        assert_eq!(text_width(""), 0);
        assert!(text_width("servers") > text_width("votes"));
        assert!(text_width("mmm") > text_width("iii"));
        // A character the table lacks counts as `m`.
        assert_eq!(text_width("\u{4e2d}"), text_width("m"));
        assert_eq!(text_width("12.3k"), text_width("12.3") + text_width("k"));
    }

    #[test]
    fn colours_and_styles_parse_or_say_why_not() {
        assert_eq!(BadgeColor::parse("4C1").unwrap().as_str(), "#4c1");
        assert_eq!(BadgeColor::parse("007ec6").unwrap().as_str(), "#007ec6");
        assert_eq!(BadgeColor::parse("Green").unwrap().as_str(), "#97ca00");
        for bad in ["", "#4c1", "12345", "ggg", "bluish", "4c1 "] {
            assert!(
                BadgeColor::parse(bad).unwrap_err().contains("`color`"),
                "{bad}"
            );
        }
        assert_eq!(BadgeStyle::parse("flat-square"), Ok(BadgeStyle::FlatSquare));
        assert!(BadgeStyle::parse("plastic")
            .unwrap_err()
            .contains("`style`"));
        assert!(parse_label(&"x".repeat(65))
            .unwrap_err()
            .contains("`label`"));
        assert!(parse_label("a\u{0}b").is_err());
        assert_eq!(parse_label("").as_deref(), Ok(""));
    }

    #[test]
    fn the_svg_is_escaped_and_its_width_fits_its_text() {
        let color = BadgeColor::default();
        let badge = Badge {
            label: "<&>\"'",
            value: "12.3k",
            color: &color,
            style: BadgeStyle::Flat,
            title: "a & b </title><script>",
        };
        let svg = badge.render();
        assert!(!svg.contains("<script>"));
        assert!(svg.contains("&lt;&amp;&gt;&quot;&apos;"));
        let width =
            (text_width("<&>\"'").div_ceil(100) + 10) + (text_width("12.3k").div_ceil(100) + 10);
        assert!(svg.starts_with(&format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="20""#
        )));
        let width_of = |svg: &str| -> u64 {
            let start = svg.find("width=\"").expect("a width") + 7;
            let end = start + svg[start..].find('"').expect("closed");
            svg[start..end].parse().expect("a number")
        };
        let longer = Badge {
            label: "servers of this bot",
            ..badge.clone()
        }
        .render();
        assert!(width_of(&longer) > width_of(&svg) + 40);
    }
}
