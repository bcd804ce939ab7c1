//! `RegistryStore`: users, skills, skill versions and deployments.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use uuid::Uuid;

use super::{Affected as _, Backend, Dialect, query};
use crate::DbError;
use crate::codec::{self, check_len};
use crate::error::ctx;
use crate::model::{Deployment, DeploymentStatus, SkillRecord, SkillVersion, User};
use crate::traits::RegistryStore;

/// A skill version number: 1 or more.
fn check_version(version: i32) -> Result<(), DbError> {
    if version < 1 {
        return Err(DbError::Invalid {
            what: "skill version",
            detail: format!("{version} is below 1"),
        });
    }
    Ok(())
}

/// Inserts `v` (the statement ending with `on_conflict`); whether a row was inserted.
async fn insert_skill_version<S: Backend>(
    store: &S,
    v: &SkillVersion,
    on_conflict: &str,
) -> Result<bool, DbError> {
    check_version(v.version)?;
    let sql = format!(
        "INSERT INTO skill_versions (skill_id, version, body, model, created_at) \
         VALUES ($1, $2, $3, $4, $5){on_conflict}"
    );
    let done = query(&sql)
        .bind(<S::Db as Dialect>::id(v.skill_id))
        .bind(v.version)
        .bind(Json(&v.body))
        .bind(&v.model)
        .bind(<S::Db as Dialect>::ts(v.created_at))
        .execute(store.pool())
        .await
        .map_err(ctx("inserting skill version"))?;
    Ok(done.rows_affected() == 1)
}

impl<S: Backend<Db = D>, D: Dialect> RegistryStore for S {
    async fn upsert_user(&self, user: &User) -> Result<(), DbError> {
        let sql = format!(
            "INSERT INTO {} (id, email) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET email = excluded.email",
            D::USERS
        );
        query(&sql)
            .bind(D::id(user.id))
            .bind(user.email.as_deref())
            .execute(self.pool())
            .await
            .map_err(ctx("upserting user"))?;
        Ok(())
    }

    async fn create_skill(&self, skill: &SkillRecord) -> Result<(), DbError> {
        check_len("skill name", &skill.name, 1, 200)?;
        query("INSERT INTO skills (id, user_id, name, created_at) VALUES ($1, $2, $3, $4)")
            .bind(D::id(skill.id))
            .bind(D::id(skill.user_id))
            .bind(&skill.name)
            .bind(D::ts(skill.created_at))
            .execute(self.pool())
            .await
            .map_err(ctx("inserting skill"))?;
        Ok(())
    }

    async fn get_skill(&self, id: Uuid) -> Result<SkillRecord, DbError> {
        let row = query("SELECT * FROM skills WHERE id = $1")
            .bind(D::id(id))
            .fetch_optional(self.pool())
            .await
            .map_err(ctx("reading skill"))?
            .ok_or_else(|| DbError::not_found("skill", id))?;
        codec::skill_from_row(&row)
    }

    async fn add_skill_version(&self, v: &SkillVersion) -> Result<(), DbError> {
        insert_skill_version(self, v, "").await.map(|_| ())
    }

    async fn ensure_skill(&self, skill: &SkillRecord) -> Result<(), DbError> {
        check_len("skill name", &skill.name, 1, 200)?;
        let done = query(
            "INSERT INTO skills (id, user_id, name, created_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(D::id(skill.id))
        .bind(D::id(skill.user_id))
        .bind(&skill.name)
        .bind(D::ts(skill.created_at))
        .execute(self.pool())
        .await
        .map_err(ctx("inserting skill"))?;
        if done.rows_affected() == 1 {
            return Ok(());
        }
        // The name stays the first registration's (a later version may rename the skill).
        let stored = self.get_skill(skill.id).await?;
        if stored.user_id != skill.user_id {
            return Err(DbError::Conflict {
                what: "skill",
                detail: format!(
                    "{} is stored as user {}'s; it cannot be registered for user {}",
                    skill.id, stored.user_id, skill.user_id
                ),
            });
        }
        Ok(())
    }

    async fn ensure_skill_version(&self, v: &SkillVersion) -> Result<(), DbError> {
        if insert_skill_version(self, v, " ON CONFLICT (skill_id, version) DO NOTHING").await? {
            return Ok(());
        }
        let stored = self.get_skill_version(v.skill_id, v.version).await?;
        if stored.body != v.body || stored.model != v.model {
            let what = if stored.body == v.body {
                "model"
            } else {
                "body"
            };
            return Err(DbError::Conflict {
                what: "skill version",
                detail: format!(
                    "skill {} version {} is stored with a different {what}; a version is never \
                     overwritten: bump `version` in the skill file",
                    v.skill_id, v.version
                ),
            });
        }
        Ok(())
    }

    async fn get_skill_version(
        &self,
        skill_id: Uuid,
        version: i32,
    ) -> Result<SkillVersion, DbError> {
        let row = query("SELECT * FROM skill_versions WHERE skill_id = $1 AND version = $2")
            .bind(D::id(skill_id))
            .bind(version)
            .fetch_optional(self.pool())
            .await
            .map_err(ctx("reading skill version"))?
            .ok_or_else(|| DbError::not_found("skill version", format!("{skill_id} v{version}")))?;
        codec::skill_version_from_row(&row)
    }

    async fn latest_skill_version(&self, skill_id: Uuid) -> Result<SkillVersion, DbError> {
        let row =
            query("SELECT * FROM skill_versions WHERE skill_id = $1 ORDER BY version DESC LIMIT 1")
                .bind(D::id(skill_id))
                .fetch_optional(self.pool())
                .await
                .map_err(ctx("reading latest skill version"))?
                .ok_or_else(|| DbError::not_found("skill version of skill", skill_id))?;
        codec::skill_version_from_row(&row)
    }

    async fn create_deployment(&self, d: &Deployment) -> Result<(), DbError> {
        query(
            "INSERT INTO deployments (id, user_id, skill_id, skill_version, broker, status, \
             initial_equity_usd, equity_usd, config, created_at, next_tick_at, lease_owner, \
             lease_expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .bind(D::id(d.id))
        .bind(D::id(d.user_id))
        .bind(D::id(d.skill_id))
        .bind(d.skill_version)
        .bind(d.broker.as_str())
        .bind(d.status.as_str())
        .bind(D::dec(d.initial_equity_usd))
        .bind(D::dec(d.equity_usd))
        .bind(Json(&d.config))
        .bind(D::ts(d.created_at))
        .bind(D::ots(d.next_tick_at))
        .bind(d.lease_owner.as_deref())
        .bind(D::ots(d.lease_expires_at))
        .execute(self.pool())
        .await
        .map_err(ctx("inserting deployment"))?;
        Ok(())
    }

    async fn get_deployment(&self, id: Uuid) -> Result<Deployment, DbError> {
        let row = query("SELECT * FROM deployments WHERE id = $1")
            .bind(D::id(id))
            .fetch_optional(self.pool())
            .await
            .map_err(ctx("reading deployment"))?
            .ok_or_else(|| DbError::not_found("deployment", id))?;
        codec::deployment_from_row(&row)
    }

    async fn list_deployments(
        &self,
        status: Option<DeploymentStatus>,
    ) -> Result<Vec<Deployment>, DbError> {
        let rows = query(
            "SELECT * FROM deployments WHERE ($1 IS NULL OR status = $1) ORDER BY created_at, id",
        )
        .bind(status.map(DeploymentStatus::as_str))
        .fetch_all(self.pool())
        .await
        .map_err(ctx("listing deployments"))?;
        rows.iter().map(codec::deployment_from_row).collect()
    }

    async fn user_deployments(&self, user_id: Uuid) -> Result<Vec<Deployment>, DbError> {
        let rows = query("SELECT * FROM deployments WHERE user_id = $1 ORDER BY created_at, id")
            .bind(D::id(user_id))
            .fetch_all(self.pool())
            .await
            .map_err(ctx("listing a user's deployments"))?;
        rows.iter().map(codec::deployment_from_row).collect()
    }

    async fn user_skills(&self, user_id: Uuid) -> Result<Vec<SkillRecord>, DbError> {
        let rows = query("SELECT * FROM skills WHERE user_id = $1 ORDER BY created_at, id")
            .bind(D::id(user_id))
            .fetch_all(self.pool())
            .await
            .map_err(ctx("listing a user's skills"))?;
        rows.iter().map(codec::skill_from_row).collect()
    }

    async fn set_next_tick_at(
        &self,
        id: Uuid,
        next_tick_at: Option<DateTime<Utc>>,
    ) -> Result<(), DbError> {
        let done = query("UPDATE deployments SET next_tick_at = $2 WHERE id = $1")
            .bind(D::id(id))
            .bind(D::ots(next_tick_at))
            .execute(self.pool())
            .await
            .map_err(ctx("scheduling deployment"))?;
        if done.rows_affected() == 0 {
            return Err(DbError::not_found("deployment", id));
        }
        Ok(())
    }
}
