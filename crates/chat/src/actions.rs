//! Consent before any action: the coach's only way to change a deployment or a skill is
//! `prepare_action`, which checks the change against the turn's [`ChatData`] and queues a
//! pending action ([`db::NewPendingAction`]) in the turn's [`ActionJournal`]. The turn keeps it
//! when it ends ([`crate::run_chat_turn`]); nothing changes until the user confirms it
//! (`POST /api/actions/{id}/confirm`, [`db::ActionStore::confirm_action`]) before it expires.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use chrono::{DateTime, TimeDelta, Utc};
use db::{ActionKind, DeploymentStatus, MAX_ACTION_ARGUMENTS_BYTES, NewPendingAction};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use skill_schema::Problem;
use tools::{ArgsSpec, Tool, ToolError};
use uuid::Uuid;

use crate::authoring::check_draft;
use crate::catalog::ChatToolContext;
use crate::data::{ChatData, DeploymentData};

/// Tool name: prepare a change of a deployment or a skill for the user to confirm.
pub const PREPARE_ACTION: &str = "prepare_action";

/// How long a prepared action waits for the user's confirmation.
pub const DEFAULT_ACTION_TTL: TimeDelta = TimeDelta::minutes(15);

/// Longest reason the model may give with an action, in characters.
pub const MAX_ACTION_REASON_CHARS: usize = 300;

/// Most problems of a refused skill draft handed back to the model.
const MAX_DRAFT_PROBLEMS: usize = 20;

/// The route a client confirms an action with, for the action `id`.
#[must_use]
pub fn confirm_route(id: Uuid) -> String {
    format!("POST /api/actions/{id}/confirm")
}

/// The id of the `order`-th action prepared in turn `turn_id` (from 0): UUID v5 of both, so a
/// turn replayed with the same id prepares the same actions.
#[must_use]
pub fn action_id(turn_id: Uuid, order: usize) -> Uuid {
    Uuid::new_v5(&turn_id, format!("prepare_action:{order}").as_bytes())
}

/// The actions one turn prepared, in call order (kept by the turn when it ends).
#[derive(Debug, Default)]
pub struct ActionJournal(Mutex<Vec<NewPendingAction>>);

impl ActionJournal {
    fn push(&self, action: NewPendingAction) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(action);
    }

    fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// The prepared actions, emptying the journal.
    #[must_use]
    pub fn take(&self) -> Vec<NewPendingAction> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// What `prepare_action` prepares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ActionArg {
    PauseDeployment,
    ResumeDeployment,
    StopDeployment,
    SaveSkillVersion,
}

impl ActionArg {
    const fn kind(self) -> ActionKind {
        match self {
            ActionArg::PauseDeployment => ActionKind::PauseDeployment,
            ActionArg::ResumeDeployment => ActionKind::ResumeDeployment,
            ActionArg::StopDeployment => ActionKind::StopDeployment,
            ActionArg::SaveSkillVersion => ActionKind::SaveSkillVersion,
        }
    }
}

/// Arguments of `prepare_action`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct PrepareActionArgs {
    /// What to prepare: pause_deployment, resume_deployment, stop_deployment or
    /// save_skill_version.
    pub action: ActionArg,
    /// The deployment to pause, resume or stop (one of the user's).
    #[serde(default)]
    pub deployment_id: Option<Uuid>,
    /// stop_deployment only: also close every open position.
    #[serde(default)]
    pub flatten: Option<bool>,
    /// save_skill_version: the skill (one of the user's own) to save a new version of.
    #[serde(default)]
    pub skill_id: Option<Uuid>,
    /// save_skill_version: the whole new skill document as JSON (its version number is set to
    /// the skill's next when the user confirms).
    #[serde(default)]
    pub skill: Option<Map<String, Value>>,
    /// Why, in a few words (kept with the action and its audit trail).
    #[serde(default)]
    #[schemars(length(max = 300))]
    pub reason: Option<String>,
}

fn invalid(problem: String) -> ToolError {
    ToolError::InvalidArguments {
        tool: PREPARE_ACTION.to_owned(),
        problems: vec![problem],
    }
}

/// The deployment as the summary names it: `"BTC breakout" v1 (BTC, ETH 1h)`.
fn deployment_label(d: &DeploymentData) -> String {
    let mut out = types::text::quoted(&d.skill_name);
    out.push_str(" v");
    types::text::push_uint(
        &mut out,
        u64::try_from(d.deployment.skill_version).unwrap_or_default(),
    );
    let symbols: Vec<&str> = d
        .deployment
        .config
        .get("symbols")
        .and_then(Value::as_array)
        .map(|s| s.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let interval = d.deployment.config.get("interval").and_then(Value::as_str);
    if !symbols.is_empty() || interval.is_some() {
        out.push_str(" (");
        out.push_str(&tools::one_line(&symbols.join(", ")));
        if let Some(interval) = interval {
            if !symbols.is_empty() {
                out.push(' ');
            }
            out.push_str(&tools::one_line(interval));
        }
        out.push(')');
    }
    out
}

/// Whether `status` allows `kind` (a stop of a stopped deployment only to close its positions;
/// the store decides whether that was asked already).
fn allowed(kind: ActionKind, status: DeploymentStatus, flatten: bool) -> bool {
    use DeploymentStatus::{Active, Paused, Stopped};
    match (kind, status) {
        (ActionKind::PauseDeployment, Active)
        | (ActionKind::ResumeDeployment, Paused)
        | (ActionKind::StopDeployment, Active | Paused) => true,
        (ActionKind::StopDeployment, Stopped) => flatten,
        _ => false,
    }
}

/// What a deployment action needs: the user's deployment in a status that allows it. Its
/// target, arguments and summary.
fn deployment_action(
    data: &ChatData,
    args: &PrepareActionArgs,
    kind: ActionKind,
) -> Result<(Uuid, Map<String, Value>, String), ToolError> {
    let mut problems = Vec::new();
    if args.skill_id.is_some() {
        problems.push(format!("skillId: {} takes no skill", kind.as_str()));
    }
    if args.skill.is_some() {
        problems.push(format!("skill: {} takes no skill document", kind.as_str()));
    }
    if args.flatten.is_some() && kind != ActionKind::StopDeployment {
        problems.push(format!(
            "flatten: closing the positions goes with stop_deployment, not {}",
            kind.as_str()
        ));
    }
    let Some(id) = args.deployment_id else {
        problems.push(format!(
            "deploymentId: {} needs the deployment (get_my_deployments lists them)",
            kind.as_str()
        ));
        return Err(ToolError::InvalidArguments {
            tool: PREPARE_ACTION.to_owned(),
            problems,
        });
    };
    if !problems.is_empty() {
        return Err(ToolError::InvalidArguments {
            tool: PREPARE_ACTION.to_owned(),
            problems,
        });
    }
    let d = data.deployment(id).ok_or_else(|| {
        invalid(format!(
            "deploymentId: {id} is not one of the user's deployments"
        ))
    })?;
    let flatten = args.flatten.unwrap_or(false);
    let status = d.deployment.status;
    if !allowed(kind, status, flatten) {
        let needs = match kind {
            ActionKind::PauseDeployment => "an active deployment",
            ActionKind::ResumeDeployment => "a paused deployment",
            _ if flatten => {
                "an active or paused deployment, or a stopped one to close its positions"
            }
            _ => "an active or paused deployment (a stopped one is final)",
        };
        return Err(invalid(format!(
            "deploymentId: {id} is {}; {} needs {needs}",
            status.as_str(),
            kind.as_str()
        )));
    }
    let verb = match kind {
        ActionKind::PauseDeployment => "Pause",
        ActionKind::ResumeDeployment => "Resume",
        _ => "Stop",
    };
    let mut summary = format!("{verb} deployment {}", deployment_label(d));
    if flatten {
        summary.push_str(" and close its open positions");
    }
    summary.push_str(", now ");
    summary.push_str(status.as_str());
    let mut arguments = Map::new();
    if kind == ActionKind::StopDeployment {
        arguments.insert("flatten".into(), Value::Bool(flatten));
    }
    Ok((id, arguments, summary))
}

/// The loader's problems with a draft, for the model, each with its path under `skill`.
fn draft_problems(problems: &[Problem]) -> Vec<String> {
    let mut out: Vec<String> = problems
        .iter()
        .take(MAX_DRAFT_PROBLEMS)
        .map(|p| {
            let path = if p.path == "(root)" {
                "skill".to_owned()
            } else {
                format!("skill.{}", p.path)
            };
            format!("{path}: {}", p.message)
        })
        .collect();
    if problems.len() > MAX_DRAFT_PROBLEMS {
        out.push(format!(
            "skill: {} more problems; fix these first",
            problems.len() - MAX_DRAFT_PROBLEMS
        ));
    }
    out
}

/// What a skill version needs: the user's own skill and a draft the loader accepts. Its
/// target, arguments and summary.
fn skill_action(
    data: &ChatData,
    args: &PrepareActionArgs,
) -> Result<(Uuid, Map<String, Value>, String), ToolError> {
    let mut problems = Vec::new();
    if args.deployment_id.is_some() {
        problems.push("deploymentId: save_skill_version takes no deployment".to_owned());
    }
    if args.flatten.is_some() {
        problems.push("flatten: save_skill_version closes no position".to_owned());
    }
    if args.skill_id.is_none() {
        problems.push("skillId: save_skill_version needs the skill".to_owned());
    }
    if args.skill.is_none() {
        problems.push("skill: save_skill_version needs the whole new skill document".to_owned());
    }
    let (Some(skill_id), Some(draft), true) = (args.skill_id, &args.skill, problems.is_empty())
    else {
        return Err(ToolError::InvalidArguments {
            tool: PREPARE_ACTION.to_owned(),
            problems,
        });
    };
    let owned = data
        .skills
        .iter()
        .find(|s| s.record.id == skill_id)
        .ok_or_else(|| {
            invalid(format!(
                "skillId: {skill_id} is not one of the user's own skills (list_my_skills lists \
                 them)"
            ))
        })?;
    let loaded = check_draft(&Value::Object(draft.clone())).map_err(|problems| {
        ToolError::InvalidArguments {
            tool: PREPARE_ACTION.to_owned(),
            problems: draft_problems(&problems),
        }
    })?;
    if let Some(id) = loaded.skill.id
        && id != skill_id
    {
        return Err(invalid(format!(
            "skill.id: {id} is another skill's id than skillId {skill_id}; leave it out or make \
             it equal"
        )));
    }
    let model = tools::one_line(&loaded.skill.model);
    let document = serde_json::to_value(&loaded.skill)
        .map_err(|e| invalid(format!("skill: the document cannot be kept: {e}")))?;
    let mut arguments = Map::new();
    arguments.insert("skill".into(), document);
    let mut summary = format!("Save skill {} as ", types::text::quoted(&owned.record.name));
    match &owned.latest {
        Some(latest) => {
            summary.push_str("a new version after v");
            types::text::push_uint(
                &mut summary,
                u64::try_from(latest.version).unwrap_or_default(),
            );
        }
        None => summary.push_str("its first version"),
    }
    summary.push_str(" (model ");
    summary.push_str(&model);
    summary.push(')');
    Ok((skill_id, arguments, summary))
}

/// `prepare_action`: validates a change against the turn's data and queues it for the user's
/// confirmation.
pub(crate) struct PrepareAction(pub(crate) ChatToolContext);

impl Tool for PrepareAction {
    fn name(&self) -> &'static str {
        PREPARE_ACTION
    }

    fn description(&self) -> &'static str {
        "Prepare a change for the user to confirm: pause_deployment, resume_deployment, \
         stop_deployment (flatten: true also closes its open positions) of one of their \
         deployments (deploymentId), or save_skill_version of one of their own skills \
         (skillId, skill: the whole new skill document as JSON; its version becomes the \
         skill's next). NOTHING CHANGES until the user confirms it in the app (within 15 \
         minutes, else it expires): tell them what you prepared and that it waits for their \
         confirmation, never that it is done. Returns actionId, status pending, the summary, \
         expiresAt. A draft the skill loader refuses comes back with each problem's path \
         (skill.risk.maxLeverage: ...) to fix and prepare again."
    }

    fn parameters(&self) -> Arc<Value> {
        static ARGS: OnceLock<ArgsSpec> = OnceLock::new();
        Arc::clone(&ARGS.get_or_init(ArgsSpec::of::<PrepareActionArgs>).schema)
    }

    fn can_act(&self) -> bool {
        true
    }

    fn call(&self, args: Value) -> Result<Value, ToolError> {
        static ARGS: OnceLock<ArgsSpec> = OnceLock::new();
        let args: PrepareActionArgs = ARGS
            .get_or_init(ArgsSpec::of::<PrepareActionArgs>)
            .parser
            .parse(PREPARE_ACTION, args)?;
        let ctx = &self.0;
        let data = &ctx.data;
        let kind = args.action.kind();
        let reason = args
            .reason
            .as_deref()
            .map(tools::one_line)
            .filter(|r| !r.is_empty());
        if let Some(r) = &reason
            && r.chars().count() > MAX_ACTION_REASON_CHARS
        {
            return Err(invalid(format!(
                "reason: at most {MAX_ACTION_REASON_CHARS} characters"
            )));
        }
        let (deployment_id, skill_id, mut arguments, summary) = if kind.control().is_some() {
            let (id, arguments, summary) = deployment_action(data, &args, kind)?;
            (Some(id), None, arguments, summary)
        } else {
            let (id, arguments, summary) = skill_action(data, &args)?;
            (None, Some(id), arguments, summary)
        };
        if let Some(r) = reason {
            arguments.insert("reason".into(), Value::String(r));
        }
        let arguments = Value::Object(arguments);
        let bytes = arguments.to_string().len();
        if bytes > MAX_ACTION_ARGUMENTS_BYTES {
            return Err(invalid(format!(
                "skill: {bytes} bytes of JSON; an action keeps at most \
                 {MAX_ACTION_ARGUMENTS_BYTES}"
            )));
        }
        let summary: String = types::cut_chars(&summary, db::MAX_ACTION_SUMMARY_CHARS)
            .0
            .to_owned();
        let id = action_id(ctx.turn_id, ctx.actions.len());
        let expires_at: DateTime<Utc> = data.now + DEFAULT_ACTION_TTL;
        ctx.actions.push(NewPendingAction {
            id,
            user_id: data.user_id,
            conversation_id: None,
            kind,
            deployment_id,
            skill_id,
            arguments,
            summary: summary.clone(),
            created_at: data.now,
            expires_at,
        });
        Ok(json!({
            "actionId": id,
            "status": "pending",
            "summary": summary,
            "expiresAt": expires_at,
            "confirmWith": confirm_route(id),
        }))
    }
}
