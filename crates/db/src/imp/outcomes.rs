//! `OutcomeStore`: the outcome memory of seed 003 — outcomes and market snapshots written with
//! their tick, scores, annotations, reads.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::{Postgres, Sqlite, Transaction};
use uuid::Uuid;

use super::tick::{statement_slices, values_sql};
use super::{Affected as _, Backend, Dialect, query};
use crate::codec::{self, check_limit};
use crate::error::ctx;
use crate::model::{
    Annotation, AnnotationTarget, MemoryScope, NewAnnotation, OutcomeWrites, Regraded,
};
use crate::traits::OutcomeStore;
use crate::{DbError, TickRecord};

/// Most rows one outcome read returns.
pub(crate) const MAX_OUTCOME_ROWS: u32 = 1000;

/// A tick's outcome rows belong to its deployment and its time, an outcome names its tick's
/// decision snapshot, and no indicator is NaN or infinite.
pub(crate) fn validate_outcome_writes(tick: &TickRecord) -> Result<(), DbError> {
    let s = &tick.snapshot;
    let w = &tick.outcomes;
    let invalid = |detail: String| DbError::Invalid {
        what: "tick outcome rows",
        detail,
    };
    for m in &w.snapshots {
        if m.deployment_id != s.deployment_id
            || m.tick_at != s.tick_at
            || m.decision_snapshot_id != s.id
        {
            return Err(invalid(format!(
                "market snapshot {} is not of the tick {} of deployment {}",
                m.id, s.tick_at, s.deployment_id
            )));
        }
        let i = &m.indicators;
        let values = [
            ("rsi_15m", i.rsi_15m),
            ("rsi_1h", i.rsi_1h),
            ("rsi_4h", i.rsi_4h),
            ("volatility_percentile", i.volatility_percentile),
            ("volume_ratio", i.volume_ratio),
            ("trend_strength", i.trend_strength),
            ("btc_correlation", i.btc_correlation),
        ];
        if let Some((name, v)) = values
            .iter()
            .find(|(_, v)| v.is_some_and(|v| !v.is_finite()))
        {
            return Err(invalid(format!(
                "market snapshot {}: {name} is {v:?}, not a finite number",
                m.id
            )));
        }
    }
    for o in &w.outcomes {
        if o.deployment_id != s.deployment_id
            || o.tick_at != s.tick_at
            || o.decision_snapshot_id != s.id
        {
            return Err(invalid(format!(
                "outcome {} is not of the tick {} of deployment {}",
                o.id, s.tick_at, s.deployment_id
            )));
        }
        if let Some(reason) = &o.reason {
            crate::codec::check_len("outcome reason", reason, 1, outcomes::MAX_REASON_CHARS)?;
        }
        if let Some(m) = w.snapshots.iter().find(|m| m.id == o.snapshot_id)
            && m.indicators.market_condition != o.market_condition
        {
            return Err(invalid(format!(
                "outcome {}: market condition {} is not its snapshot's {}",
                o.id,
                o.market_condition.as_str(),
                m.indicators.market_condition.as_str()
            )));
        }
        if o.confidence.is_some_and(|c| c > 100) {
            return Err(invalid(format!(
                "outcome {}: confidence {:?} is above 100",
                o.id, o.confidence
            )));
        }
    }
    Ok(())
}

/// Checks an annotation's bounds.
pub(crate) fn validate_annotation(a: &crate::NewAnnotation) -> Result<(), DbError> {
    use crate::model::{MAX_ANNOTATION_CHARS, MAX_ANNOTATION_TAGS, MAX_TAG_CHARS};
    crate::codec::check_len("annotation", &a.annotation, 1, MAX_ANNOTATION_CHARS)?;
    if a.tags.len() > MAX_ANNOTATION_TAGS {
        return Err(DbError::Bound {
            field: "annotation tags",
            actual: a.tags.len(),
            min: 0,
            max: MAX_ANNOTATION_TAGS,
        });
    }
    for t in &a.tags {
        crate::codec::check_len("annotation tag", t, 1, MAX_TAG_CHARS)?;
    }
    Ok(())
}

/// A limit of a recall or a search: 1..=`max`.
pub(crate) fn check_read_limit(what: &'static str, limit: u32, max: u32) -> Result<i64, DbError> {
    if limit == 0 {
        return Err(DbError::Invalid {
            what,
            detail: "0: at least one row must be asked for".into(),
        });
    }
    crate::codec::check_limit(what, limit, max)
}

/// The smallest and the largest UUID that begin with the hex digits of `prefix` (hyphens
/// ignored): the id range an outcome id prefix matches. Both backends order ids as their hex
/// digits (PostgreSQL's uuid bytewise, SQLite's lowercase hyphenated text, hyphens at the same
/// places), so `id BETWEEN lo AND hi` is the prefix test, on the primary key's index.
///
/// # Errors
/// [`DbError::Invalid`] for a prefix without hex digits, with more than 32, or with another
/// character than a hex digit or a hyphen.
pub(crate) fn id_prefix_range(prefix: &str) -> Result<(uuid::Uuid, uuid::Uuid), DbError> {
    let invalid = |detail: String| DbError::Invalid {
        what: "outcome id prefix",
        detail,
    };
    let digits: String = prefix
        .chars()
        .filter(|c| *c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if let Some(c) = digits.chars().find(|c| !c.is_ascii_hexdigit()) {
        return Err(invalid(format!("{prefix:?}: {c:?} is not a hex digit")));
    }
    if digits.is_empty() || digits.len() > 32 {
        return Err(invalid(format!(
            "{prefix:?}: {} hex digits, not 1 to 32",
            digits.len()
        )));
    }
    let pad = |fill: char| {
        let mut full = digits.clone();
        full.extend(std::iter::repeat_n(fill, 32 - digits.len()));
        uuid::Uuid::parse_str(&full).map_err(|e| invalid(format!("{prefix:?}: {e}")))
    };
    Ok((pad('0')?, pad('f')?))
}

/// The terms of a search text ([`outcomes::SearchTerms::parse`]), refused as `search text`.
///
/// # Errors
/// [`DbError::Invalid`] for a text that is empty after trimming, longer than
/// [`outcomes::MAX_SEARCH_CHARS`] characters, or without a word.
pub(crate) fn search_terms(text: &str) -> Result<outcomes::SearchTerms, DbError> {
    outcomes::SearchTerms::parse(text).map_err(|e| DbError::Invalid {
        what: "search text",
        detail: e.to_string(),
    })
}

/// The condition that a row (`alias.deployment_id`) is in `scope`, the scope's id as `$param`.
pub(crate) fn scope_sql(alias: &str, scope: crate::MemoryScope, param: usize) -> String {
    match scope {
        crate::MemoryScope::Deployment(_) => format!("{alias}.deployment_id = ${param}"),
        crate::MemoryScope::User(_) => format!(
            "{alias}.deployment_id IN (SELECT id FROM deployments WHERE user_id = ${param})"
        ),
    }
}

/// The id a scope binds.
pub(crate) fn scope_id(scope: crate::MemoryScope) -> uuid::Uuid {
    match scope {
        crate::MemoryScope::Deployment(id) | crate::MemoryScope::User(id) => id,
    }
}

/// The search's candidate statement, in both backends: the scored narratives and the
/// annotations of `scope` by `as_of` whose lowercased text contains each of `words`
/// substrings (`contains(haystack, $n)` is the backend's substring test), the newest
/// [`outcomes::search::MAX_CANDIDATES`] by time then id. Matching and ranking are Rust's
/// (`outcomes::search::rank`), so the backends need to agree on this candidate set only, and
/// they do: both test ASCII words against the same text.
/// Columns: `kind`, `id`, `deployment_id`, `outcome_id`, `trade_id`, `symbol`, `at`, `body`,
/// `tags`. Parameters: `$1` `as_of`, `$2` the scope's id, `$3`.. the words, then the limit.
pub(crate) fn candidates_sql(
    scope: crate::MemoryScope,
    words: usize,
    contains: fn(&str, usize) -> String,
    annotation_text: &str,
    null_uuid: &str,
    null_tags: &str,
) -> String {
    let (of_outcome, of_annotation) = (scope_sql("o", scope, 2), scope_sql("a", scope, 2));
    let all = |haystack: &str| -> String {
        (0..words)
            .map(|i| format!(" AND {}", contains(haystack, i + 3)))
            .collect()
    };
    format!(
        "SELECT * FROM ( \
         SELECT 'outcome' AS kind, o.id AS id, o.deployment_id AS deployment_id, \
         o.id AS outcome_id, {null_uuid} AS trade_id, o.symbol AS symbol, o.tick_at AS at, \
         o.narrative AS body, {null_tags} AS tags \
         FROM trade_outcomes o \
         WHERE o.narrative IS NOT NULL AND o.scored_at <= $1 AND {of_outcome}{} \
         UNION ALL \
         SELECT 'annotation', a.id, a.deployment_id, a.outcome_id, a.trade_id, o.symbol, \
         a.created_at, a.annotation, a.tags \
         FROM trade_annotations a LEFT JOIN trade_outcomes o ON o.id = a.outcome_id \
         WHERE a.created_at <= $1 AND {of_annotation}{} \
         ) candidates ORDER BY at DESC, id LIMIT ${}",
        all("o.narrative"),
        all(annotation_text),
        words + 3
    )
}

/// A database's search candidate statement ([`candidates_sql`] with its substring test).
pub(crate) trait SearchSql: Dialect {
    fn search_sql(scope: MemoryScope, words: usize) -> String;
}

/// SQLite: `instr(lower(…), $n)`; an annotation's text with its tags' JSON.
impl SearchSql for Sqlite {
    fn search_sql(scope: MemoryScope, words: usize) -> String {
        candidates_sql(
            scope,
            words,
            |h, n| format!("instr(lower({h}), ${n}) > 0"),
            "(a.annotation || ' ' || coalesce(a.tags, ''))",
            "NULL",
            "NULL",
        )
    }
}

/// PostgreSQL: `strpos(lower(…), $n)`; an annotation's text with its tags.
impl SearchSql for Postgres {
    fn search_sql(scope: MemoryScope, words: usize) -> String {
        candidates_sql(
            scope,
            words,
            |h, n| format!("strpos(lower({h}), ${n}) > 0"),
            "(a.annotation || ' ' || array_to_string(a.tags, ' '))",
            "NULL::uuid",
            "NULL::text[]",
        )
    }
}

/// Inserts the market snapshots and outcomes of `writes` (a replay of stored rows
/// is skipped by id), every snapshot first, in statements of the sizes
/// `statement_chunks` gives. An outcome is inserted with `scores[id]` when the batch
/// scores it already (taken out of the map: one statement instead of an insert and
/// updates), else with its own score columns.
pub(crate) async fn insert_outcome_rows<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    writes: &[&OutcomeWrites],
    scores: &mut HashMap<Uuid, &outcomes::OutcomeScore>,
) -> Result<(), DbError> {
    let snapshots: Vec<_> = writes.iter().flat_map(|w| &w.snapshots).collect();
    for chunk in statement_slices(snapshots.as_slice()) {
        let size = chunk.len();
        let sql = values_sql(
            "INSERT INTO market_snapshots (id, deployment_id, decision_snapshot_id, \
             tick_at, symbol, rsi_15m, rsi_1h, rsi_4h, macd_signal, \
             volatility_percentile, volume_ratio, trend_strength, btc_correlation, \
             reference_symbol, market_condition)",
            15,
            size,
            D::NUMBERED_PARAMS,
            "ON CONFLICT (id) DO NOTHING",
        );
        let mut query = query(&sql);
        for m in chunk {
            let i = &m.indicators;
            query = query
                .bind(D::id(m.id))
                .bind(D::id(m.deployment_id))
                .bind(D::id(m.decision_snapshot_id))
                .bind(D::ts(m.tick_at))
                .bind(&m.symbol)
                .bind(i.rsi_15m)
                .bind(i.rsi_1h)
                .bind(i.rsi_4h)
                .bind(i.macd_signal.map(|s| s.as_str()))
                .bind(i.volatility_percentile)
                .bind(i.volume_ratio)
                .bind(i.trend_strength)
                .bind(i.btc_correlation)
                .bind(&m.reference_symbol)
                .bind(i.market_condition.as_str());
        }
        query
            .execute(&mut **tx)
            .await
            .map_err(ctx("inserting market snapshots"))?;
    }
    let rows: Vec<_> = writes
        .iter()
        .flat_map(|w| &w.outcomes)
        .map(|o| (o, scores.remove(&o.id).unwrap_or(&o.score)))
        .collect();
    for chunk in statement_slices(rows.as_slice()) {
        let size = chunk.len();
        let sql = values_sql(
            "INSERT INTO trade_outcomes (id, deployment_id, decision_snapshot_id, \
             snapshot_id, tick_at, symbol, direction, confidence, entry_price, \
             predicted_stop, predicted_target, verdict, price_1h, price_4h, price_24h, \
             pnl_percent_1h, pnl_percent_4h, pnl_percent_24h, hit_target, hit_stop, \
             first_hit, max_favorable, max_adverse, outcome_grade, scored_at, reason, \
             market_condition, narrative)",
            28,
            size,
            D::NUMBERED_PARAMS,
            "ON CONFLICT (id) DO NOTHING",
        );
        let mut query = query(&sql);
        for (o, sc) in chunk {
            query = query
                .bind(D::id(o.id))
                .bind(D::id(o.deployment_id))
                .bind(D::id(o.decision_snapshot_id))
                .bind(D::id(o.snapshot_id))
                .bind(D::ts(o.tick_at))
                .bind(&o.symbol)
                .bind(codec::side_str(o.direction))
                .bind(o.confidence.map(i32::from))
                .bind(D::dec(o.entry_price))
                .bind(D::odec(o.predicted_stop))
                .bind(D::odec(o.predicted_target))
                .bind(o.verdict.as_str())
                .bind(D::odec(sc.price_1h))
                .bind(D::odec(sc.price_4h))
                .bind(D::odec(sc.price_24h))
                .bind(D::odec(sc.pnl_percent_1h))
                .bind(D::odec(sc.pnl_percent_4h))
                .bind(D::odec(sc.pnl_percent_24h))
                .bind(sc.hit_target)
                .bind(sc.hit_stop)
                .bind(sc.first_hit.map(|f| f.as_str()))
                .bind(D::odec(sc.max_favorable))
                .bind(D::odec(sc.max_adverse))
                .bind(sc.outcome_grade.map(|g| g.as_str()))
                .bind(D::ots(sc.scored_at))
                .bind(o.reason.as_deref())
                .bind(o.market_condition.as_str())
                .bind(sc.narrative.as_deref());
        }
        query
            .execute(&mut **tx)
            .await
            .map_err(ctx("inserting trade outcomes"))?;
    }
    Ok(())
}

/// Writes outcomes' scores (distinct ids), in statements of the sizes
/// `statement_chunks` gives; an outcome already scored in full (`scored_at` set)
/// keeps its score. Returns how many outcomes changed.
pub(crate) async fn write_scores<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    scores: &[(Uuid, &outcomes::OutcomeScore)],
) -> Result<u64, DbError> {
    let mut changed = 0;
    for chunk in statement_slices(scores) {
        let size = chunk.len();
        let sql = format!(
            "UPDATE trade_outcomes SET price_1h = v.column2, price_4h = v.column3, \
             price_24h = v.column4, pnl_percent_1h = v.column5, \
             pnl_percent_4h = v.column6, pnl_percent_24h = v.column7, \
             hit_target = v.column8, hit_stop = v.column9, first_hit = v.column10, \
             max_favorable = v.column11, max_adverse = v.column12, \
             outcome_grade = v.column13, scored_at = v.column14, narrative = v.column15 \
             FROM ({}) AS v WHERE trade_outcomes.id = v.column1 \
             AND trade_outcomes.scored_at IS NULL",
            values_sql("", 15, size, D::NUMBERED_PARAMS, "").trim()
        );
        let mut query = query(&sql);
        for (id, s) in chunk {
            query = query
                .bind(D::id(*id))
                .bind(D::odec(s.price_1h))
                .bind(D::odec(s.price_4h))
                .bind(D::odec(s.price_24h))
                .bind(D::odec(s.pnl_percent_1h))
                .bind(D::odec(s.pnl_percent_4h))
                .bind(D::odec(s.pnl_percent_24h))
                .bind(s.hit_target)
                .bind(s.hit_stop)
                .bind(s.first_hit.map(|f| f.as_str()))
                .bind(D::odec(s.max_favorable))
                .bind(D::odec(s.max_adverse))
                .bind(s.outcome_grade.map(|g| g.as_str()))
                .bind(D::ots(s.scored_at))
                .bind(s.narrative.as_deref());
        }
        changed += query
            .execute(&mut **tx)
            .await
            .map_err(ctx("scoring trade outcomes"))?
            .rows_affected();
    }
    Ok(changed)
}

impl<S: Backend<Db = D>, D: SearchSql> OutcomeStore for S {
    async fn unscored_outcomes(
        &self,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<outcomes::TradeOutcome>, DbError> {
        let limit = check_limit("unscored outcomes limit", limit, MAX_OUTCOME_ROWS)?;
        let rows = query(
            "SELECT * FROM trade_outcomes WHERE scored_at IS NULL AND tick_at <= $1 \
             ORDER BY tick_at, id LIMIT $2",
        )
        .bind(D::ts(
            now - chrono::Duration::hours(outcomes::MARKS_HOURS[0]),
        ))
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(ctx("reading unscored outcomes"))?;
        rows.iter().map(codec::outcome_from_row).collect()
    }

    async fn score_outcomes(
        &self,
        scores: &[(Uuid, outcomes::OutcomeScore)],
    ) -> Result<u64, DbError> {
        if scores.is_empty() {
            return Ok(0);
        }
        let mut tx = self.begin().await.map_err(ctx("beginning scores"))?;
        // One outcome twice: in order, each write seeing the one before (a full score
        // ends the updates); otherwise all of them in a few statements.
        let mut ids = std::collections::HashSet::with_capacity(scores.len());
        let rows: Vec<(Uuid, &outcomes::OutcomeScore)> =
            scores.iter().map(|(id, s)| (*id, s)).collect();
        let changed = if rows.iter().all(|(id, _)| ids.insert(*id)) {
            write_scores(&mut tx, &rows).await?
        } else {
            let mut changed = 0;
            for row in &rows {
                changed += write_scores(&mut tx, std::slice::from_ref(row)).await?;
            }
            changed
        };
        tx.commit().await.map_err(ctx("committing scores"))?;
        Ok(changed)
    }

    async fn outcomes(
        &self,
        deployment_id: Uuid,
        limit: u32,
    ) -> Result<Vec<outcomes::TradeOutcome>, DbError> {
        let limit = check_limit("outcomes limit", limit, MAX_OUTCOME_ROWS)?;
        let rows = query(
            "SELECT * FROM trade_outcomes WHERE deployment_id = $1 \
             ORDER BY tick_at DESC, id LIMIT $2",
        )
        .bind(D::id(deployment_id))
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(ctx("reading trade outcomes"))?;
        rows.iter().map(codec::outcome_from_row).collect()
    }

    async fn symbol_outcomes(
        &self,
        deployment_id: Option<Uuid>,
        symbol: &str,
        from: DateTime<Utc>,
        until: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<outcomes::TradeOutcome>, DbError> {
        let limit = check_limit("symbol outcomes limit", limit, MAX_OUTCOME_ROWS)?;
        let of_deployment = if deployment_id.is_some() {
            "AND deployment_id = $5 "
        } else {
            ""
        };
        // [from, until): the window convention of every outcome-memory reader.
        let sql = format!(
            "SELECT * FROM trade_outcomes WHERE symbol = $1 AND tick_at >= $2 \
             AND tick_at < $3 {of_deployment}ORDER BY tick_at DESC, id LIMIT $4"
        );
        let mut q = query(&sql)
            .bind(symbol)
            .bind(D::ts(from))
            .bind(D::ts(until))
            .bind(limit);
        if let Some(d) = deployment_id {
            q = q.bind(D::id(d));
        }
        let rows = q
            .fetch_all(self.pool())
            .await
            .map_err(ctx("reading a symbol's outcomes"))?;
        rows.iter().map(codec::outcome_from_row).collect()
    }

    async fn outcome(&self, id: Uuid) -> Result<outcomes::TradeOutcome, DbError> {
        let row = query("SELECT * FROM trade_outcomes WHERE id = $1")
            .bind(D::id(id))
            .fetch_optional(self.pool())
            .await
            .map_err(ctx("reading trade outcome"))?
            .ok_or_else(|| DbError::not_found("trade outcome", id))?;
        codec::outcome_from_row(&row)
    }

    async fn outcome_ids_by_prefix(
        &self,
        scope: MemoryScope,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<Uuid>, DbError> {
        let (lo, hi) = id_prefix_range(prefix)?;
        let limit = check_read_limit("outcome id prefix limit", limit, MAX_OUTCOME_ROWS)?;
        let sql = format!(
            "SELECT o.id FROM trade_outcomes o WHERE o.id BETWEEN $1 AND $2 AND {} \
             ORDER BY o.id LIMIT $4",
            scope_sql("o", scope, 3)
        );
        let rows = query(&sql)
            .bind(D::id(lo))
            .bind(D::id(hi))
            .bind(D::id(scope_id(scope)))
            .bind(limit)
            .fetch_all(self.pool())
            .await
            .map_err(ctx("resolving an outcome id prefix"))?;
        rows.iter().map(|r| codec::RowExt::uuid(r, "id")).collect()
    }

    async fn market_snapshot(&self, id: Uuid) -> Result<outcomes::MarketSnapshot, DbError> {
        let row = query("SELECT * FROM market_snapshots WHERE id = $1")
            .bind(D::id(id))
            .fetch_optional(self.pool())
            .await
            .map_err(ctx("reading market snapshot"))?
            .ok_or_else(|| DbError::not_found("market snapshot", id))?;
        codec::market_snapshot_from_row(&row)
    }

    async fn annotate(&self, a: &NewAnnotation) -> Result<Annotation, DbError> {
        validate_annotation(a)?;
        let (table, what, outcome_id, trade_id, target_id) = match a.target {
            AnnotationTarget::Outcome(id) => {
                ("trade_outcomes", "trade outcome", Some(id), None, id)
            }
            AnnotationTarget::Trade(id) => {
                ("trade_history", "trade_history row", None, Some(id), id)
            }
        };
        let mut tx = self.begin().await.map_err(ctx("beginning annotation"))?;
        let row = query(&format!("SELECT deployment_id FROM {table} WHERE id = $1"))
            .bind(D::id(target_id))
            .fetch_optional(&mut *tx)
            .await
            .map_err(ctx("reading annotated row"))?
            .ok_or_else(|| DbError::not_found(what, target_id))?;
        let deployment_id = codec::RowExt::uuid(&row, "deployment_id")?;
        query(
            "INSERT INTO trade_annotations (id, deployment_id, outcome_id, trade_id, \
             annotation, tags, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(D::id(a.id))
        .bind(D::id(deployment_id))
        .bind(D::oid(outcome_id))
        .bind(D::oid(trade_id))
        .bind(&a.annotation)
        .bind(D::symbols(&a.tags))
        .bind(D::ts(a.created_at))
        .execute(&mut *tx)
        .await
        .map_err(ctx("inserting annotation"))?;
        tx.commit().await.map_err(ctx("committing annotation"))?;
        Ok(Annotation {
            id: a.id,
            deployment_id,
            target: a.target,
            annotation: a.annotation.clone(),
            tags: a.tags.clone(),
            created_at: a.created_at,
        })
    }

    async fn annotations(
        &self,
        deployment_id: Uuid,
        limit: u32,
    ) -> Result<Vec<Annotation>, DbError> {
        let limit = check_limit("annotations limit", limit, MAX_OUTCOME_ROWS)?;
        let rows = query(
            "SELECT * FROM trade_annotations WHERE deployment_id = $1 \
             ORDER BY created_at DESC, id LIMIT $2",
        )
        .bind(D::id(deployment_id))
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(ctx("reading annotations"))?;
        rows.iter().map(codec::annotation_from_row).collect()
    }

    async fn recall_outcomes(
        &self,
        scope: MemoryScope,
        query: &outcomes::RecallQuery,
    ) -> Result<Vec<outcomes::RecalledOutcome>, DbError> {
        let limit = check_read_limit("recall limit", query.limit, outcomes::MAX_RECALL_ROWS)?;
        let mut sql = format!(
            "SELECT o.*, m.rsi_15m, m.rsi_1h, m.rsi_4h, m.macd_signal, \
             m.volatility_percentile, m.volume_ratio, m.trend_strength, m.btc_correlation, \
             m.market_condition AS snapshot_market_condition \
             FROM trade_outcomes o JOIN market_snapshots m ON m.id = o.snapshot_id \
             WHERE o.tick_at < $1 AND {}",
            scope_sql("o", scope, 2)
        );
        let mut n = 3;
        let mut next = |cond: &str| {
            let c = format!(" AND {cond} ${n}");
            n += 1;
            c
        };
        if query.since.is_some() {
            sql.push_str(&next("o.tick_at >="));
        }
        if query.symbol.is_some() {
            sql.push_str(&next("o.symbol ="));
        }
        if query.market_condition.is_some() {
            sql.push_str(&next("o.market_condition ="));
        }
        sql.push_str(&format!(" ORDER BY o.tick_at DESC, o.id LIMIT ${n}"));
        let mut q = super::query(&sql)
            .bind(D::ts(query.as_of))
            .bind(D::id(scope_id(scope)));
        if let Some(since) = query.since {
            q = q.bind(D::ts(since));
        }
        if let Some(symbol) = &query.symbol {
            q = q.bind(symbol.as_str());
        }
        if let Some(c) = query.market_condition {
            q = q.bind(c.as_str());
        }
        let rows = q
            .bind(limit)
            .fetch_all(self.pool())
            .await
            .map_err(ctx("recalling outcomes"))?;
        rows.iter()
            .map(|r| {
                let mut recalled = codec::recalled_from_row(r)?;
                recalled.outcome = recalled.outcome.as_of(query.as_of);
                Ok(recalled)
            })
            .collect()
    }

    async fn search_memory(
        &self,
        scope: MemoryScope,
        query: &outcomes::SearchQuery,
    ) -> Result<outcomes::SearchHits, DbError> {
        let terms = search_terms(&query.text)?;
        let limit = check_read_limit("search limit", query.limit, outcomes::MAX_SEARCH_HITS)?;
        let words = terms.prefilter();
        let sql = D::search_sql(scope, words.len());
        let mut q = super::query(&sql)
            .bind(D::ts(query.as_of))
            .bind(D::id(scope_id(scope)));
        for w in &words {
            q = q.bind(w.as_str());
        }
        let rows = q
            .bind(i64::from(outcomes::search::MAX_CANDIDATES))
            .fetch_all(self.pool())
            .await
            .map_err(ctx("searching the outcome memory"))?;
        let candidates = rows
            .iter()
            .map(codec::hit_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(outcomes::search::rank(
            &terms,
            candidates,
            usize::try_from(limit).unwrap_or(usize::MAX),
        ))
    }

    async fn regrade_outcomes(&self) -> Result<Regraded, DbError> {
        let mut tx = self.begin().await.map_err(ctx("beginning a regrade"))?;
        let mut report = Regraded::default();
        let mut after = Uuid::nil();
        loop {
            let rows = query(
                "SELECT o.*, m.rsi_15m, m.rsi_1h, m.rsi_4h, m.macd_signal, \
                 m.volatility_percentile, m.volume_ratio, m.trend_strength, \
                 m.btc_correlation, m.market_condition AS snapshot_market_condition \
                 FROM trade_outcomes o JOIN market_snapshots m ON m.id = o.snapshot_id \
                 WHERE o.scored_at IS NOT NULL AND o.id > $1 ORDER BY o.id LIMIT $2",
            )
            .bind(D::id(after))
            .bind(i64::from(MAX_OUTCOME_ROWS))
            .fetch_all(&mut *tx)
            .await
            .map_err(ctx("reading scored outcomes"))?;
            let page: Vec<outcomes::RecalledOutcome> = rows
                .iter()
                .map(codec::recalled_from_row)
                .collect::<Result<_, _>>()?;
            let Some(last) = page.last() else { break };
            after = last.outcome.id;
            report.scored += page.len() as u64;
            let changed: Vec<(Uuid, Option<&'static str>, String)> = page
                .iter()
                .filter_map(|r| {
                    let o = &r.outcome;
                    let s = outcomes::regrade(o, Some(&r.indicators));
                    let text = s.narrative.unwrap_or_default();
                    let same = s.outcome_grade == o.score.outcome_grade
                        && o.score.narrative.as_deref() == Some(text.as_str());
                    (!same).then(|| (o.id, s.outcome_grade.map(|g| g.as_str()), text))
                })
                .collect();
            for chunk in statement_slices(changed.as_slice()) {
                let sql = format!(
                    "UPDATE trade_outcomes SET outcome_grade = v.column2, \
                     narrative = v.column3 FROM ({}) AS v \
                     WHERE trade_outcomes.id = v.column1",
                    values_sql("", 3, chunk.len(), D::NUMBERED_PARAMS, "").trim()
                );
                let mut query = query(&sql);
                for (id, grade, text) in chunk {
                    query = query.bind(D::id(*id)).bind(*grade).bind(text.as_str());
                }
                report.changed += query
                    .execute(&mut *tx)
                    .await
                    .map_err(ctx("writing regraded outcomes"))?
                    .rows_affected();
            }
            if page.len() < MAX_OUTCOME_ROWS as usize {
                break;
            }
        }
        tx.commit().await.map_err(ctx("committing a regrade"))?;
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::search_terms;
    use crate::DbError;

    #[test]
    fn search_texts_without_words_or_too_long_are_refused_by_name() {
        for (text, needle) in [
            ("", "empty after trimming"),
            (" \t\n", "empty after trimming"),
            ("* \" : ( ) -", "has no word"),
        ] {
            match search_terms(text) {
                Err(DbError::Invalid { what, detail }) => {
                    assert_eq!(what, "search text");
                    assert!(detail.contains(needle), "{text:?}: {detail}");
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
        let long = "é".repeat(outcomes::MAX_SEARCH_CHARS + 1);
        assert!(matches!(search_terms(&long), Err(DbError::Invalid { .. })));
        assert!(search_terms(&"é".repeat(outcomes::MAX_SEARCH_CHARS)).is_ok());
    }

    #[test]
    fn the_candidate_statements_test_each_word_as_a_substring_of_the_lowercased_text() {
        let scope = crate::MemoryScope::Deployment(uuid::Uuid::nil());
        let lite = <sqlx::Sqlite as super::SearchSql>::search_sql(scope, 2);
        assert!(
            lite.contains(
                "instr(lower(o.narrative), $3) > 0 AND instr(lower(o.narrative), $4) > 0"
            ),
            "{lite}"
        );
        assert!(lite.ends_with("ORDER BY at DESC, id LIMIT $5"), "{lite}");
        let pg = <sqlx::Postgres as super::SearchSql>::search_sql(scope, 1);
        assert!(
            pg.contains(
                "strpos(lower((a.annotation || ' ' || array_to_string(a.tags, ' '))), $3) > 0"
            ),
            "{pg}"
        );
        assert!(pg.ends_with("LIMIT $4"), "{pg}");
    }
}
