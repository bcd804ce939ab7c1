//! The MCP servers of the deployments this runner ticks: started when it first ticks a
//! deployment whose skill names some, kept for that deployment (restarted when its skill
//! version changes), stopped when the runner's loop ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use mcp::McpServers;
use skill_schema::Skill;
use tools::Tool;
use uuid::Uuid;

use super::{RunError, Runner};

/// One deployment's started servers and the skill version they were started for.
struct Started {
    skill: (Uuid, i32),
    servers: McpServers,
}

/// Started servers by deployment. A deployment's slot has a lock of its own, held while its
/// servers start: the deployment's one tick in flight waits, no other deployment does.
#[derive(Default)]
pub(super) struct DeploymentServers {
    slots: Mutex<HashMap<Uuid, Arc<tokio::sync::Mutex<Option<Started>>>>>,
}

impl DeploymentServers {
    fn slot(&self, deployment: Uuid) -> Arc<tokio::sync::Mutex<Option<Started>>> {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(deployment)
            .or_default()
            .clone()
    }

    fn take_all(&self) -> Vec<Arc<tokio::sync::Mutex<Option<Started>>>> {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, slot)| slot)
            .collect()
    }
}

impl Runner {
    /// The tools of `d`'s MCP servers for its tick: none when its skill names no server;
    /// otherwise the servers started for this skill version, started now if they are not
    /// running yet (a previous version's are stopped first).
    ///
    /// # Errors
    /// [`RunError::Mcp`] when a server cannot start: that tick's error (the next attempt tries
    /// again).
    pub(super) async fn mcp_tools(
        &self,
        d: &db::Deployment,
        skill: &Skill,
    ) -> Result<Arc<[Arc<dyn Tool>]>, RunError> {
        if skill.tools.mcp_servers.is_empty() {
            return Ok(Arc::new([]));
        }
        let key = (d.skill_id, d.skill_version);
        let slot = self.mcp.slot(d.id);
        let mut started = slot.lock().await;
        if let Some(s) = started.as_ref().filter(|s| s.skill == key) {
            return Ok(s.servers.tools());
        }
        if let Some(old) = started.take() {
            tracing::info!(deployment = %d.id, "the skill version changed: restarting its MCP servers");
            old.servers.shutdown().await;
        }
        let servers = McpServers::start(&skill.tools.mcp_servers)
            .await
            .map_err(|source| RunError::Mcp {
                deployment: d.id,
                source,
            })?;
        tracing::info!(deployment = %d.id, servers = ?servers.server_names(), "MCP servers started");
        let tools = servers.tools();
        *started = Some(Started {
            skill: key,
            servers,
        });
        Ok(tools)
    }

    /// Stops every deployment's MCP servers (the end of [`Runner::run`]; a runner dropped
    /// without it kills them as it drops).
    pub async fn shutdown_mcp_servers(&self) {
        for slot in self.mcp.take_all() {
            if let Some(s) = slot.lock().await.take() {
                s.servers.shutdown().await;
            }
        }
    }

    /// How many deployments have MCP servers running (for tests).
    #[must_use]
    pub fn deployments_with_mcp_servers(&self) -> usize {
        self.mcp
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter(|slot| slot.try_lock().map_or(true, |s| s.is_some()))
            .count()
    }
}
