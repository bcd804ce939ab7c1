-- Live news (#16 item 2): headlines polled from RSS/Atom feeds by the runner (see the
-- PostgreSQL migration of the same name).
CREATE TABLE news_items (
    id               TEXT PRIMARY KEY,
    feed             TEXT NOT NULL CONSTRAINT news_items_feed_len CHECK (length(feed) BETWEEN 1 AND 2000),
    source           TEXT NOT NULL CONSTRAINT news_items_source_len CHECK (length(source) BETWEEN 1 AND 200),
    guid             TEXT NOT NULL CONSTRAINT news_items_guid_len CHECK (length(guid) BETWEEN 1 AND 2000),
    title            TEXT NOT NULL CONSTRAINT news_items_title_len CHECK (length(title) BETWEEN 1 AND 500),
    link             TEXT CONSTRAINT news_items_link_len CHECK (link IS NULL OR length(link) BETWEEN 1 AND 2000),
    summary          TEXT CONSTRAINT news_items_summary_len CHECK (summary IS NULL OR length(summary) BETWEEN 1 AND 2000),
    published_at     TEXT NOT NULL,
    fetched_at       TEXT NOT NULL,
    symbols          TEXT NOT NULL DEFAULT '[]' CONSTRAINT news_items_symbols_json CHECK (json_valid(symbols)),
    sentiment        TEXT NOT NULL CONSTRAINT news_items_sentiment CHECK (CAST(sentiment AS REAL) BETWEEN -1 AND 1),
    sentiment_source TEXT NOT NULL CONSTRAINT news_items_sentiment_source CHECK (sentiment_source IN ('feed', 'lexicon')),
    importance       TEXT NOT NULL CONSTRAINT news_items_importance CHECK (CAST(importance AS REAL) BETWEEN 0 AND 1),
    CONSTRAINT news_items_feed_guid UNIQUE (feed, guid)
) STRICT;
CREATE INDEX news_items_published_idx ON news_items (published_at);
