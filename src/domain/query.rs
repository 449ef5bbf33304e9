//! Query strings, decoded strictly: a malformed percent-escape or bytes that are not UTF-8 are
//! refused naming the parameter, never replaced by something the client did not send.

use std::borrow::Cow;

/// Why a query string was refused, in the API's words.
#[derive(Debug, PartialEq, Eq)]
pub struct QueryStringError(pub String);

/// A decoded name and its value.
pub type Pair<'a> = (Cow<'a, str>, Cow<'a, str>);

/// How much of a bad name is quoted back.
const QUOTED_CHARS: usize = 40;

/// Decodes `application/x-www-form-urlencoded` pairs: `+` is a space, `%` must start two hex
/// digits, and each decoded name and value must be UTF-8 (no overlong forms, no surrogates).
/// A name or value with nothing to decode is borrowed from the query string, as most are.
pub fn pairs(query_string: &str) -> Result<Vec<Pair<'_>>, QueryStringError> {
    each_pair(query_string).collect()
}

/// [`pairs`] one at a time, for a reader that needs no list of them: the first refusal ends
/// the walk, as it ends [`pairs`].
pub fn each_pair(
    query_string: &str,
) -> impl Iterator<Item = Result<Pair<'_>, QueryStringError>> + '_ {
    query_string
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = decode(raw_name).map_err(|why| {
                QueryStringError(format!(
                    "the query parameter name `{}` {why}",
                    quoted(raw_name)
                ))
            })?;
            let value =
                decode(raw_value).map_err(|why| QueryStringError(format!("`{name}` {why}")))?;
            Ok((name, value))
        })
}

fn quoted(raw: &str) -> String {
    raw.chars().take(QUOTED_CHARS).collect()
}

/// One name or value; the error completes a sentence that starts with what it is.
fn decode(raw: &str) -> Result<Cow<'_, str>, String> {
    let bytes = raw.as_bytes();
    if !bytes.iter().any(|&b| b == b'+' || b == b'%') {
        return Ok(Cow::Borrowed(raw));
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'+' => {
                out.push(b' ');
                at += 1;
            }
            b'%' => {
                let high = bytes.get(at + 1).copied().and_then(hex);
                let low = bytes.get(at + 2).copied().and_then(hex);
                let (Some(high), Some(low)) = (high, low) else {
                    let escape: String = raw[at..].chars().take(3).collect();
                    return Err(format!(
                        "has a malformed percent-escape `{escape}` (% must be followed by two hex digits)"
                    ));
                };
                out.push(high << 4 | low);
                at += 3;
            }
            byte => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8(out).map(Cow::Owned).map_err(|_| {
        "does not decode to UTF-8 text (a truncated, overlong or surrogate sequence)".to_owned()
    })
}

fn hex(byte: u8) -> Option<u8> {
    (byte as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_pairs_decode() {
        assert_eq!(
            pairs("q=hello+w%C3%B6rld&tags=a%2Cb&&empty=&flag").expect("valid"),
            vec![
                ("q".into(), "hello wörld".into()),
                ("tags".into(), "a,b".into()),
                ("empty".into(), "".into()),
                ("flag".into(), "".into()),
            ]
        );
    }

    #[test]
    fn every_malformed_class_is_refused_naming_the_parameter() {
        for (query, names) in [
            ("q=%zz", "`q`"),
            ("q=abc%", "`q`"),
            ("q=%4", "`q`"),
            ("q=%E0%A4", "`q`"),
            ("q=%C0%AF", "`q`"),
            ("q=%ED%A0%80", "`q`"),
            ("q=%FF", "`q`"),
            ("userId=1%zz", "`userId`"),
            ("%zz=1", "`%zz`"),
            ("ta%E0%A4gs=x", "`ta%E0%A4gs`"),
            ("a%C0%AF=1", "`a%C0%AF`"),
        ] {
            let QueryStringError(message) = pairs(query).expect_err(query);
            assert!(message.contains(names), "{query}: {message}");
        }
    }
}
