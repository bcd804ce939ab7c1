use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{ContextConfig, RiskCaps, Strategy, ToolSpec};

/// Namespace for skill ids derived from names (uuid v5).
const SKILL_ID_NAMESPACE: Uuid = Uuid::from_u128(0x7f3e_2a51_9c4d_4b8e_a1f0_5d6c_3b2a_1e09);

/// A skill version: everything a deployment needs to run the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "Skill")]
pub struct Skill {
    /// Stable identity across versions. When absent it is derived from `name` (uuid v5), so
    /// the same file always maps to the same skill.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Uuid>,
    /// Display name, 1–80 characters; also the seed of the derived id.
    #[schemars(length(min = 1, max = 80))]
    pub name: String,
    /// Version of this skill document, from 1 to 2,147,483,647 (the stores' `integer` column).
    #[schemars(range(min = 1, max = 2_147_483_647))]
    pub version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// What the skill is for, in the author's words; at most 1,000 characters.
    #[schemars(length(max = 1000))]
    pub description: Option<String>,
    /// `provider/model`, e.g. `anthropic/claude-sonnet-4.6`, `openai/gpt-5`,
    /// `builtin/sma-cross:10:20`.
    #[schemars(regex(pattern = r"^[a-z0-9-]+/\S+$"))]
    pub model: String,
    /// Most tool-call rounds per tick. Default 5.
    #[serde(default = "default_max_steps")]
    #[schemars(range(min = 1, max = 20))]
    pub max_steps: u32,
    /// The author's strategy, shown in the STRATEGY segment of the system prompt.
    pub strategy: Strategy,
    /// What the agent is shown each tick: timeframes, symbols, news, memory, events.
    pub context: ContextConfig,
    /// The hard caps the execution engine enforces.
    pub risk: RiskCaps,
    /// The tools the model may call. Default: `propose_order` only.
    #[serde(default)]
    pub tools: ToolSpec,
}

const fn default_max_steps() -> u32 {
    5
}

impl Skill {
    /// Whether a tick of this skill reads its outcome memory: the `<trading_memory>` block is on
    /// (with the memory dial) or the whitelist lists a recall tool. A backtest writes every
    /// earlier tick before such a tick, so the memory it reads is complete.
    #[must_use]
    pub fn reads_outcome_memory(&self) -> bool {
        let m = &self.context.memory;
        (m.enabled && m.trading_memory) || self.tools.lists_recall_tool()
    }

    /// The skill's id: the explicit one, or a uuid v5 of its name. For a store shared by many
    /// users, use [`skill_id_for`](Self::skill_id_for): names are per owner.
    #[must_use]
    pub fn skill_id(&self) -> Uuid {
        self.id
            .unwrap_or_else(|| Uuid::new_v5(&SKILL_ID_NAMESPACE, self.name.as_bytes()))
    }

    /// The skill's id in a store shared by many users: the explicit one, or a uuid v5 of the
    /// owner and the name, so two users' skills of the same name are two skills and one user
    /// cannot take a name (or learn that it is taken) in another's namespace.
    #[must_use]
    pub fn skill_id_for(&self, owner: Uuid) -> Uuid {
        self.id.unwrap_or_else(|| {
            let mut key = owner.as_bytes().to_vec();
            key.push(b'\n');
            key.extend_from_slice(self.name.as_bytes());
            Uuid::new_v5(&SKILL_ID_NAMESPACE, &key)
        })
    }
}
