//! Plain text from feed text: tags dropped, the common HTML entities decoded, whitespace
//! collapsed, bounded.

/// `s` without HTML tags (`<…>` removed), with `&amp; &lt; &gt; &quot; &apos; &#39; &nbsp;`
/// and numeric entities (`&#8217;`, `&#x2019;`) decoded, runs of whitespace made one space,
/// trimmed.
pub(crate) fn plain(s: &str) -> String {
    let mut no_tags = String::with_capacity(s.len());
    let mut in_tag = false;
    for c in s.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                no_tags.push(' ');
            }
            _ if !in_tag => no_tags.push(c),
            _ => {}
        }
    }
    let decoded = decode_entities(&no_tags);
    decoded.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn decode_entities(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let entity = tail
            .find(';')
            .filter(|&end| end <= 10)
            .and_then(|end| decode_one(&tail[1..end]).map(|c| (c, end)));
        match entity {
            Some((c, end)) => {
                out.push(c);
                rest = &tail[end + 1..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn decode_one(name: &str) -> Option<char> {
    match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        "nbsp" => Some(' '),
        _ => {
            let num = name.strip_prefix('#')?;
            let code = match num.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => num.parse().ok()?,
            };
            char::from_u32(code)
        }
    }
}

/// The first `max` characters of `s`, the last one `…` when it was cut.
pub(crate) fn bounded(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The whole words of `s`: maximal runs of letters and digits.
pub(crate) fn words(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_go_entities_decode_whitespace_collapses() {
        assert_eq!(
            plain("<p>Bitcoin&nbsp;ETF <b>inflows</b>\n\n hit &#36;1bn &amp; more&#x2019;s</p>"),
            "Bitcoin ETF inflows hit $1bn & more’s"
        );
        assert_eq!(plain("AT&T &unknown; & co"), "AT&T &unknown; & co");
    }

    #[test]
    fn bounded_cuts_with_an_ellipsis() {
        assert_eq!(bounded("abcdef", 4), "abc…");
        assert_eq!(bounded("abc", 4), "abc");
    }

    #[test]
    fn words_split_on_anything_not_a_letter_or_digit() {
        assert_eq!(
            words("BTC-USD: (ETH), sol/usd").collect::<Vec<_>>(),
            ["BTC", "USD", "ETH", "sol", "usd"]
        );
    }
}
