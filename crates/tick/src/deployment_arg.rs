//! `--deployment` of the commands that read one deployment's records (`notes`, `reflect`,
//! `lessons held`, `ledger rebuild`): optional when the store holds exactly one deployment, as
//! a backtest's `sim.db` does.

use db::{DbError, Deployment, RegistryStore};
use uuid::Uuid;

/// Most deployments [`DeploymentArgError::Several`] lists.
const MAX_LISTED: usize = 20;

/// Why `--deployment` names no deployment of the store.
#[derive(Debug, thiserror::Error)]
pub enum DeploymentArgError {
    /// The id given is not a deployment of the store.
    #[error("--deployment {0}: no such deployment in this store")]
    Unknown(Uuid),
    /// No id given and the store holds no deployment.
    #[error("--deployment: the store holds no deployment")]
    Empty,
    /// No id given and the store holds more than one deployment: they are listed.
    #[error("--deployment is needed: the store holds {count} deployments\n{listing}")]
    Several {
        /// How many deployments the store holds.
        count: usize,
        /// One line per deployment (id, skill, version, status, creation time), the first 20
        /// of them.
        listing: String,
    },
    /// The store failed.
    #[error("reading the deployments: {0}")]
    Store(#[from] DbError),
}

/// The deployment `given` names, or without one the store's only deployment.
///
/// # Errors
/// [`DeploymentArgError`]: an unknown id, a store without deployments, or several to choose
/// from (each listed with its id, so the message says what to pass).
pub async fn the_deployment<S: RegistryStore>(
    store: &S,
    given: Option<Uuid>,
) -> Result<Deployment, DeploymentArgError> {
    if let Some(id) = given {
        return store.get_deployment(id).await.map_err(|e| match e {
            DbError::NotFound { .. } => DeploymentArgError::Unknown(id),
            other => DeploymentArgError::Store(other),
        });
    }
    let mut all = store.list_deployments(None).await?;
    match all.len() {
        0 => Err(DeploymentArgError::Empty),
        1 => Ok(all.remove(0)),
        count => {
            let mut listing = String::new();
            for d in all.iter().take(MAX_LISTED) {
                let skill = store
                    .get_skill(d.skill_id)
                    .await
                    .map_or_else(|_| d.skill_id.to_string(), |s| s.name);
                listing.push_str(&format!(
                    "  {}  {skill} v{}, {}, created {}\n",
                    d.id,
                    d.skill_version,
                    d.status.as_str(),
                    d.created_at.to_rfc3339(),
                ));
            }
            if count > MAX_LISTED {
                listing.push_str(&format!("  … and {} more\n", count - MAX_LISTED));
            }
            Err(DeploymentArgError::Several { count, listing })
        }
    }
}
