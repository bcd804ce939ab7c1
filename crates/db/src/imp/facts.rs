//! `FactStore`: user facts, their audit trail and the top-K read.

use chrono::{DateTime, Utc};
use types::{FactChange, UserFact};
use uuid::Uuid;

use super::{Affected as _, Backend, Dialect, query};
use crate::DbError;
use crate::codec::{self, check_limit};
use crate::error::ctx;
use crate::model::{FactEdit, Forget, NewFact};
use crate::traits::FactStore;

fn validate_fact_text(fact: &str, topic: Option<&str>) -> Result<(), DbError> {
    codec::check_len("fact", fact, types::MIN_FACT_CHARS, types::MAX_FACT_CHARS)?;
    if let Some(topic) = topic {
        codec::check_len("fact topic", topic, 1, types::MAX_FACT_TOPIC_CHARS)?;
    }
    Ok(())
}

impl<S: Backend<Db = D>, D: Dialect> FactStore for S {
    async fn remember(&self, fact: &NewFact, at: DateTime<Utc>) -> Result<UserFact, DbError> {
        validate_fact_text(&fact.fact, fact.topic.as_deref())?;
        query(
            "INSERT INTO user_facts (id, user_id, skill_id, fact, source, confidence, topic, \
             created_at, last_referenced_at, updated_by) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9)",
        )
        .bind(D::id(fact.id))
        .bind(D::id(fact.user_id))
        .bind(D::oid(fact.skill_id))
        .bind(&fact.fact)
        .bind(fact.source.as_str())
        .bind(fact.confidence.as_str())
        .bind(fact.topic.as_deref())
        .bind(D::ts(at))
        .bind(&fact.actor)
        .execute(self.pool())
        .await
        .map_err(ctx("inserting user fact"))?;
        Ok(UserFact {
            id: fact.id,
            user_id: fact.user_id,
            skill_id: fact.skill_id,
            fact: fact.fact.clone(),
            source: fact.source,
            confidence: fact.confidence,
            topic: fact.topic.clone(),
            last_referenced_at: Some(at),
            created_at: at,
            archived_at: None,
            archived_reason: None,
        })
    }

    async fn edit_fact(
        &self,
        user_id: Uuid,
        fact_id: Uuid,
        edit: &FactEdit,
        actor: &str,
        at: DateTime<Utc>,
    ) -> Result<UserFact, DbError> {
        let mut tx = self.begin().await.map_err(ctx("beginning fact edit"))?;
        let row = query(
            "SELECT * FROM user_facts WHERE id = $1 AND user_id = $2 AND archived_at IS NULL",
        )
        .bind(D::id(fact_id))
        .bind(D::id(user_id))
        .fetch_optional(&mut *tx)
        .await
        .map_err(ctx("reading user fact"))?
        .ok_or_else(|| {
            DbError::not_found("active fact of user", format!("{fact_id} ({user_id})"))
        })?;
        let mut fact = codec::fact_from_row(&row)?;
        if let Some(text) = &edit.fact {
            fact.fact = text.clone();
        }
        if let Some(c) = edit.confidence {
            fact.confidence = c;
        }
        if let Some(topic) = &edit.topic {
            fact.topic = topic.clone();
        }
        validate_fact_text(&fact.fact, fact.topic.as_deref())?;
        fact.last_referenced_at = fact.last_referenced_at.max(Some(at));
        query(
            "UPDATE user_facts SET fact = $2, confidence = $3, topic = $4, updated_by = $5, \
             last_referenced_at = $6 WHERE id = $1",
        )
        .bind(D::id(fact_id))
        .bind(&fact.fact)
        .bind(fact.confidence.as_str())
        .bind(fact.topic.as_deref())
        .bind(actor)
        .bind(D::ots(fact.last_referenced_at))
        .execute(&mut *tx)
        .await
        .map_err(ctx("updating user fact"))?;
        tx.commit().await.map_err(ctx("committing fact edit"))?;
        Ok(fact)
    }

    async fn forget(&self, user_id: Uuid, fact_id: Uuid, forget: &Forget) -> Result<(), DbError> {
        let done = query(
            "UPDATE user_facts SET archived_at = COALESCE(archived_at, $3), \
             archived_reason = COALESCE(archived_reason, $4), \
             updated_by = CASE WHEN archived_at IS NULL THEN $5 ELSE updated_by END \
             WHERE id = $1 AND user_id = $2",
        )
        .bind(D::id(fact_id))
        .bind(D::id(user_id))
        .bind(D::ts(forget.at))
        .bind(forget.reason.as_str())
        .bind(&forget.actor)
        .execute(self.pool())
        .await
        .map_err(ctx("archiving user fact"))?;
        if done.rows_affected() == 0 {
            return Err(DbError::not_found(
                "fact of user",
                format!("{fact_id} ({user_id})"),
            ));
        }
        Ok(())
    }

    async fn top_facts(
        &self,
        user_id: Uuid,
        skill_id: Option<Uuid>,
        k: u32,
        bump_at: Option<DateTime<Utc>>,
    ) -> Result<Vec<UserFact>, DbError> {
        let k = check_limit("facts K", k, types::MAX_MEMORY_K)?;
        let mut tx = self.begin().await.map_err(ctx("beginning fact read"))?;
        let rows = query(
            "SELECT * FROM user_facts WHERE user_id = $1 AND archived_at IS NULL \
             AND (skill_id IS NULL OR skill_id = $2) \
             ORDER BY last_referenced_at DESC NULLS LAST, created_at DESC, id LIMIT $3",
        )
        .bind(D::id(user_id))
        .bind(D::oid(skill_id))
        .bind(k)
        .fetch_all(&mut *tx)
        .await
        .map_err(ctx("reading top facts"))?;
        let mut facts = rows
            .iter()
            .map(codec::fact_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(at) = bump_at {
            for f in &mut facts {
                query("UPDATE user_facts SET last_referenced_at = $2 WHERE id = $1")
                    .bind(D::id(f.id))
                    .bind(D::ts(at))
                    .execute(&mut *tx)
                    .await
                    .map_err(ctx("bumping fact reference"))?;
                f.last_referenced_at = Some(at);
            }
        }
        tx.commit().await.map_err(ctx("committing fact read"))?;
        Ok(facts)
    }

    async fn mark_referenced(
        &self,
        user_id: Uuid,
        fact_ids: &[Uuid],
        at: DateTime<Utc>,
    ) -> Result<u64, DbError> {
        let n = u32::try_from(fact_ids.len()).unwrap_or(u32::MAX);
        check_limit("facts referenced", n, types::MAX_MEMORY_K)?;
        if fact_ids.is_empty() {
            return Ok(0);
        }
        let mut tx = self
            .begin()
            .await
            .map_err(ctx("beginning fact reference"))?;
        let mut marked = 0;
        for id in fact_ids {
            // Never moves a reference back: a later write keeps its later time.
            marked += query(
                "UPDATE user_facts SET last_referenced_at = $3 WHERE id = $1 AND user_id = $2 \
                 AND archived_at IS NULL AND (last_referenced_at IS NULL OR last_referenced_at < $3)",
            )
            .bind(D::id(*id))
            .bind(D::id(user_id))
            .bind(D::ts(at))
            .execute(&mut *tx)
            .await
            .map_err(ctx("marking fact referenced"))?
            .rows_affected();
        }
        tx.commit()
            .await
            .map_err(ctx("committing fact reference"))?;
        Ok(marked)
    }

    async fn list_facts(
        &self,
        user_id: Uuid,
        include_archived: bool,
    ) -> Result<Vec<UserFact>, DbError> {
        let rows = query(
            "SELECT * FROM user_facts WHERE user_id = $1 AND ($2 OR archived_at IS NULL) \
             ORDER BY created_at DESC, id",
        )
        .bind(D::id(user_id))
        .bind(include_archived)
        .fetch_all(self.pool())
        .await
        .map_err(ctx("listing user facts"))?;
        rows.iter().map(codec::fact_from_row).collect()
    }

    async fn fact_changes(&self, fact_id: Uuid) -> Result<Vec<FactChange>, DbError> {
        let rows = query("SELECT * FROM user_fact_changes WHERE fact_id = $1 ORDER BY id")
            .bind(D::id(fact_id))
            .fetch_all(self.pool())
            .await
            .map_err(ctx("reading fact changes"))?;
        rows.iter().map(codec::fact_change_from_row).collect()
    }
}
