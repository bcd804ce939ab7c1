//! One feed document into [`NewsRecord`]s.

use chrono::{DateTime, Utc};
use db::{
    MAX_NEWS_KEY_CHARS, MAX_NEWS_SOURCE_CHARS, MAX_NEWS_SUMMARY_CHARS, MAX_NEWS_TITLE_CHARS,
    NewsRecord, SentimentSource,
};
use feed_rs::model::{Category, Entry, Feed};
use rust_decimal::Decimal;
use uuid::Uuid;

use crate::FeedError;
use crate::matching::{lexicon_sentiment, match_symbols};
use crate::text::{bounded, plain};

/// Importance of an item that names one of the deployments' symbols.
pub const IMPORTANCE_NAMED: Decimal = Decimal::from_parts(6, 0, 0, false, 1);
/// Importance of an item that names none (market-wide).
pub const IMPORTANCE_MARKET_WIDE: Decimal = Decimal::from_parts(3, 0, 0, false, 1);

/// The items of the feed document `body` fetched from `feed` at `fetched_at`, with symbols
/// matched against `symbols` (see [`match_symbols`](crate::match_symbols)).
///
/// Rules: the dedupe key (`guid`) is the item's guid / Atom id, else its first link, else
/// `title:` and a UUID v5 of its title; an item without a title is skipped, and so is a second item with a
/// guid already seen in the document; an item without a date (neither published nor updated)
/// is taken as published at `fetched_at`; title and summary are plain text (tags dropped,
/// entities decoded), bounded; sentiment is the feed's own (a category `sentiment:<decimal>`,
/// or a decimal category term under a scheme naming `sentiment`, in −1..=1) else
/// [`lexicon_sentiment`](crate::lexicon_sentiment) of title and summary; importance is
/// [`IMPORTANCE_NAMED`] when a symbol matched, else [`IMPORTANCE_MARKET_WIDE`].
///
/// # Errors
/// [`FeedError::Malformed`] when `body` is not an RSS, Atom or JSON feed.
pub fn parse_feed(
    feed: &str,
    body: &[u8],
    fetched_at: DateTime<Utc>,
    symbols: &[String],
) -> Result<Vec<NewsRecord>, FeedError> {
    // An item without a guid / id is keyed by its link (a retitled story is the same story),
    // and only without a link by its title (a UUID v5 of the text: the same on every poll;
    // feed-rs's own fallback is a random UUID there, which would store it again each time).
    let parser = feed_rs::parser::Builder::new()
        .id_generator(|links, title, _uri| match (links.first(), title) {
            (Some(l), _) if !l.href.trim().is_empty() => l.href.trim().to_owned(),
            (_, Some(t)) if !t.content.trim().is_empty() => format!(
                "title:{}",
                Uuid::new_v5(&Uuid::NAMESPACE_OID, t.content.trim().as_bytes())
            ),
            // No link, no title: skipped below.
            _ => String::new(),
        })
        .build();
    let parsed = parser.parse(body).map_err(|e| FeedError::Malformed {
        feed: feed.to_owned(),
        detail: e.to_string(),
    })?;
    let source = source_name(feed, &parsed);
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for entry in &parsed.entries {
        let Some(item) = record(feed, &source, entry, fetched_at, symbols) else {
            continue;
        };
        if seen.insert(item.guid.clone()) {
            out.push(item);
        }
    }
    Ok(out)
}

fn source_name(feed: &str, parsed: &Feed) -> String {
    let title = parsed
        .title
        .as_ref()
        .map(|t| plain(&t.content))
        .filter(|t| !t.is_empty());
    let name = title.unwrap_or_else(|| {
        let rest = feed.split_once("://").map_or(feed, |(_, r)| r);
        rest.split(['/', '?', '#'])
            .next()
            .unwrap_or(rest)
            .to_owned()
    });
    bounded(&name, MAX_NEWS_SOURCE_CHARS)
}

fn record(
    feed: &str,
    source: &str,
    e: &Entry,
    fetched_at: DateTime<Utc>,
    symbols: &[String],
) -> Option<NewsRecord> {
    let title = plain(&e.title.as_ref()?.content);
    if title.is_empty() || e.id.is_empty() || e.id.chars().count() > MAX_NEWS_KEY_CHARS {
        return None;
    }
    let title = bounded(&title, MAX_NEWS_TITLE_CHARS);
    let summary = e
        .summary
        .as_ref()
        .map(|s| plain(&s.content))
        .filter(|s| !s.is_empty())
        .map(|s| bounded(&s, MAX_NEWS_SUMMARY_CHARS));
    let link = e
        .links
        .first()
        .map(|l| l.href.trim().to_owned())
        .filter(|l| !l.is_empty() && l.chars().count() <= MAX_NEWS_KEY_CHARS);
    let text = match &summary {
        Some(s) => format!("{title}\n{s}"),
        None => title.clone(),
    };
    let matched = match_symbols(&text, symbols);
    let (sentiment, sentiment_source) = match feed_sentiment(&e.categories) {
        Some(s) => (s, SentimentSource::Feed),
        None => (lexicon_sentiment(&text), SentimentSource::Lexicon),
    };
    let importance = if matched.is_empty() {
        IMPORTANCE_MARKET_WIDE
    } else {
        IMPORTANCE_NAMED
    };
    Some(NewsRecord {
        id: Uuid::new_v5(&Uuid::NAMESPACE_URL, format!("{feed}\n{}", e.id).as_bytes()),
        feed: feed.to_owned(),
        source: source.to_owned(),
        guid: e.id.clone(),
        title,
        link,
        summary,
        published_at: e.published.or(e.updated).unwrap_or(fetched_at),
        fetched_at,
        symbols: matched,
        sentiment,
        sentiment_source,
        importance,
    })
}

/// The feed's own sentiment: a category `sentiment:<decimal>`, or a category whose scheme
/// names `sentiment` and whose term is a decimal; one outside −1..=1 is ignored.
fn feed_sentiment(categories: &[Category]) -> Option<Decimal> {
    categories.iter().find_map(|c| {
        let term = c.term.trim();
        let value = match term.strip_prefix("sentiment:") {
            Some(v) => v.trim(),
            None if c
                .scheme
                .as_deref()
                .is_some_and(|s| s.to_ascii_lowercase().contains("sentiment")) =>
            {
                term
            }
            None => return None,
        };
        value
            .parse::<Decimal>()
            .ok()
            .filter(|v| *v >= Decimal::NEGATIVE_ONE && *v <= Decimal::ONE)
            .map(|v| v.normalize())
    })
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use rust_decimal_macros::dec;

    use super::*;

    fn rss(items: &str) -> Vec<u8> {
        format!(
            "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel><title>T</title>{items}</channel></rss>"
        )
        .into_bytes()
    }

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 2, 12, 0, 0).unwrap()
    }

    #[test]
    fn without_a_guid_the_link_is_the_key_so_a_retitled_story_is_one_item() {
        let body = rss(
            "<item><title>BTC up</title><link>https://x.example/a</link></item>\
             <item><title>BTC up (updated)</title><link>https://x.example/a</link></item>\
             <item><title>No link at all</title></item>",
        );
        let items = parse_feed("https://x.example/rss", &body, now(), &[]).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].guid, "https://x.example/a");
        assert_eq!(items[0].title, "BTC up", "the first one is kept");
        assert!(items[1].guid.starts_with("title:"), "{}", items[1].guid);
        let again = parse_feed("https://x.example/rss", &body, now(), &[]).unwrap();
        assert_eq!(
            again[1].guid, items[1].guid,
            "the title hash is deterministic"
        );
        assert_eq!(again[1].id, items[1].id);
    }

    #[test]
    fn the_feeds_own_sentiment_wins_when_in_range() {
        let body = rss(
            "<item><title>Rally</title><guid>a</guid><category>sentiment:1.5</category></item>\
             <item><title>Rally</title><guid>b</guid>\
               <category domain=\"https://x.example/sentiment\">-0.25</category></item>\
             <item><title>Rally</title><guid>c</guid><category>sentiment:oops</category></item>",
        );
        let items = parse_feed("https://x.example/rss", &body, now(), &[]).unwrap();
        let got: Vec<_> = items
            .iter()
            .map(|n| (n.guid.as_str(), n.sentiment, n.sentiment_source))
            .collect();
        assert_eq!(
            got,
            [
                ("a", dec!(1), SentimentSource::Lexicon),
                ("b", dec!(-0.25), SentimentSource::Feed),
                ("c", dec!(1), SentimentSource::Lexicon),
            ],
            "out of range or not a number: the lexicon score of \"Rally\""
        );
    }

    #[test]
    fn not_a_feed_is_malformed_and_names_the_feed() {
        let err = parse_feed("https://x.example/rss", b"{\"not\": 1", now(), &[]).unwrap_err();
        assert!(matches!(err, FeedError::Malformed { .. }));
        assert!(err.to_string().contains("https://x.example/rss"), "{err}");
    }
}
