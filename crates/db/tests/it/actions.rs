//! Pending actions on every backend: kept pending, listed newest first, discarded; a
//! confirmation applies a pause with its `deployment_controls` row in the transaction that marks
//! the action confirmed, saves a skill's next version (the owner's skill only), marks a change
//! its own rules refuse `failed`, and refuses an expired action while changing nothing; a
//! decision is final in the database too. On PostgreSQL, row-level security keeps a user out of
//! another's actions even when the code asks for them by the owner's id.

pub(crate) mod cases {
    use db::test_support::{at, sample_pending_action, seed};
    use db::{
        ActionKind, ActionResult, ActionStatus, DbError, DeploymentStatus, NewPendingAction,
        Storage,
    };
    use serde_json::json;
    use uuid::Uuid;

    use crate::common::RawSql;

    fn conflict(result: Result<db::PendingAction, DbError>, needle: &str) -> String {
        match result {
            Err(e @ DbError::Conflict { .. }) => {
                let text = e.to_string();
                assert!(text.contains(needle), "{needle:?} not in {text}");
                text
            }
            other => panic!("expected a conflict ({needle}), got {other:?}"),
        }
    }

    /// Asserts that `deployment` is still active with no control audited.
    async fn untouched<S: Storage>(s: &S, deployment: Uuid) {
        assert_eq!(
            s.get_deployment(deployment).await.unwrap().status,
            DeploymentStatus::Active
        );
        assert!(
            s.deployment_controls(deployment, 10)
                .await
                .unwrap()
                .is_empty()
        );
    }

    pub(crate) async fn actions_are_kept_listed_and_discarded<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        let user = fx.user.id;
        let first = sample_pending_action(&fx, ActionKind::PauseDeployment, at(0));
        let second = NewPendingAction {
            arguments: json!({"flatten": true, "reason": "the thesis is broken"}),
            ..sample_pending_action(&fx, ActionKind::StopDeployment, at(5))
        };
        let kept = s.create_pending_action(&first).await.unwrap();
        assert_eq!(kept.status, ActionStatus::Pending);
        assert_eq!((kept.decided_at, kept.result.clone()), (None, None));
        s.create_pending_action(&second).await.unwrap();

        // Newest first; the stop's arguments read back as written.
        let pending = s.pending_actions(user, at(6), 10).await.unwrap();
        let ids: Vec<Uuid> = pending.iter().map(|a| a.id).collect();
        assert_eq!(ids, [second.id, first.id]);
        assert!(pending[0].flatten());
        assert_eq!(pending[0].reason(), Some("the thesis is broken"));
        assert_eq!(pending[1], kept);
        // Past the first's expiry (15 minutes), only the second is pending.
        let later = s.pending_actions(user, at(15), 10).await.unwrap();
        assert_eq!(later.iter().map(|a| a.id).collect::<Vec<_>>(), [second.id]);
        assert_eq!(
            s.action(user, first.id).await.unwrap().status_at(at(15)),
            ActionStatus::Expired
        );

        // Discarded: final, decided by the owner; a second decision is a conflict.
        let discarded = s.discard_action(user, second.id, at(7)).await.unwrap();
        assert_eq!(discarded.status, ActionStatus::Discarded);
        assert_eq!(discarded.decided_at, Some(at(7)));
        assert_eq!(discarded.decided_by, Some(user.to_string()));
        conflict(
            s.discard_action(user, second.id, at(8)).await,
            "already discarded",
        );
        conflict(
            s.confirm_action(user, second.id, at(8)).await,
            "already discarded",
        );
        assert_eq!(
            s.get_deployment(fx.deployment.id).await.unwrap().status,
            DeploymentStatus::Active
        );
        // The audit view lists every status.
        let all = s.actions(user, 10).await.unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].status, ActionStatus::Discarded);

        // A wrong owner finds nothing and decides nothing.
        let stranger = Uuid::from_u128(0xBAD);
        assert!(matches!(
            s.action(stranger, first.id).await,
            Err(DbError::NotFound { .. })
        ));
        assert!(matches!(
            s.confirm_action(stranger, first.id, at(1)).await,
            Err(DbError::NotFound { .. })
        ));
        assert!(matches!(
            s.discard_action(stranger, first.id, at(1)).await,
            Err(DbError::NotFound { .. })
        ));
        assert!(s.actions(stranger, 10).await.unwrap().is_empty());
        assert!(
            s.pending_actions(stranger, at(1), 10)
                .await
                .unwrap()
                .is_empty()
        );

        // A decided row stays decided, in the database too.
        let changed = s
            .exec(&format!(
                "UPDATE pending_actions SET status = 'pending', decided_at = NULL, \
                 decided_by = NULL WHERE CAST(id AS TEXT) = '{}'",
                second.id
            ))
            .await;
        assert!(changed.is_err(), "a decided action was reopened");
    }

    pub(crate) async fn bad_actions_are_refused<S: Storage>(s: &S) {
        let fx = seed(s).await.unwrap();
        let base = sample_pending_action(&fx, ActionKind::PauseDeployment, at(0));
        let bound = |r: Result<db::PendingAction, DbError>, what: &str| {
            assert!(matches!(r, Err(DbError::Bound { .. })), "{what}: {r:?}");
        };
        let invalid = |r: Result<db::PendingAction, DbError>, what: &str| {
            assert!(matches!(r, Err(DbError::Invalid { .. })), "{what}: {r:?}");
        };
        bound(
            s.create_pending_action(&NewPendingAction {
                summary: String::new(),
                ..base.clone()
            })
            .await,
            "an empty summary",
        );
        bound(
            s.create_pending_action(&NewPendingAction {
                summary: "x".repeat(501),
                ..base.clone()
            })
            .await,
            "a long summary",
        );
        invalid(
            s.create_pending_action(&NewPendingAction {
                summary: "Pause\nnow".into(),
                ..base.clone()
            })
            .await,
            "a line break in the summary",
        );
        bound(
            s.create_pending_action(&NewPendingAction {
                arguments: json!({"reason": "x".repeat(70_000)}),
                ..base.clone()
            })
            .await,
            "arguments over 64 KiB",
        );
        invalid(
            s.create_pending_action(&NewPendingAction {
                arguments: json!({"flatten": true}),
                ..base.clone()
            })
            .await,
            "flatten with a pause",
        );
        invalid(
            s.create_pending_action(&NewPendingAction {
                arguments: json!(["pause"]),
                ..base.clone()
            })
            .await,
            "arguments not an object",
        );
        invalid(
            s.create_pending_action(&NewPendingAction {
                expires_at: base.created_at,
                ..base.clone()
            })
            .await,
            "an expiry not after creation",
        );
        invalid(
            s.create_pending_action(&NewPendingAction {
                skill_id: Some(fx.skill.id),
                ..base.clone()
            })
            .await,
            "a deployment action naming a skill",
        );
        invalid(
            s.create_pending_action(&NewPendingAction {
                arguments: json!({}),
                ..sample_pending_action(&fx, ActionKind::SaveSkillVersion, at(0))
            })
            .await,
            "a skill version without its document",
        );
        assert!(
            s.actions(fx.user.id, 10).await.unwrap().is_empty(),
            "nothing was kept"
        );
    }

    pub(crate) async fn confirming_applies_a_pause_with_its_audit_row<S: Storage + RawSql>(s: &S) {
        let fx = seed(s).await.unwrap();
        let (user, deployment) = (fx.user.id, fx.deployment.id);
        let pause = NewPendingAction {
            arguments: json!({"reason": "CPI at 14:30"}),
            ..sample_pending_action(&fx, ActionKind::PauseDeployment, at(0))
        };
        s.create_pending_action(&pause).await.unwrap();
        // Kept, nothing changed.
        untouched(s, deployment).await;

        let done = s.confirm_action(user, pause.id, at(3)).await.unwrap();
        assert_eq!(done.status, ActionStatus::Confirmed);
        assert_eq!(done.decided_at, Some(at(3)));
        assert_eq!(done.decided_by, Some(user.to_string()));
        let Some(ActionResult::Control {
            control_id,
            from_status,
            to_status,
        }) = done.result.clone()
        else {
            panic!("a control result: {done:?}")
        };
        assert_eq!(
            (from_status, to_status),
            (DeploymentStatus::Active, DeploymentStatus::Paused)
        );
        assert_eq!(
            s.get_deployment(deployment).await.unwrap().status,
            DeploymentStatus::Paused
        );
        // The control's audit row, as the owner, naming the action and its reason.
        let controls = s.deployment_controls(deployment, 10).await.unwrap();
        assert_eq!(controls.len(), 1);
        let c = &controls[0];
        assert_eq!(c.id, control_id);
        assert_eq!(c.requested_by, user.to_string());
        assert_eq!(c.requested_at, at(3));
        let reason = c.reason.as_deref().unwrap();
        assert!(
            reason.contains(&pause.id.to_string()) && reason.ends_with("CPI at 14:30"),
            "{reason}"
        );
        // The row reads back as returned.
        assert_eq!(s.action(user, pause.id).await.unwrap(), done);

        // Confirmed once: a second confirmation changes nothing.
        conflict(
            s.confirm_action(user, pause.id, at(4)).await,
            "already confirmed",
        );
        assert_eq!(
            s.deployment_controls(deployment, 10).await.unwrap().len(),
            1
        );

        // A stop with flatten asks for the positions to be closed.
        let stop = NewPendingAction {
            arguments: json!({"flatten": true}),
            ..sample_pending_action(&fx, ActionKind::StopDeployment, at(5))
        };
        s.create_pending_action(&stop).await.unwrap();
        s.confirm_action(user, stop.id, at(6)).await.unwrap();
        let flatten = s.flatten_state(deployment).await.unwrap().unwrap();
        assert_eq!(flatten.requested_at, at(6));
        assert_eq!(
            s.get_deployment(deployment).await.unwrap().status,
            DeploymentStatus::Stopped
        );
    }

    pub(crate) async fn a_refused_change_marks_the_action_failed<S: Storage>(s: &S) {
        let fx = seed(s).await.unwrap();
        let (user, deployment) = (fx.user.id, fx.deployment.id);
        // Resuming an active deployment: its transition refuses it.
        let resume = sample_pending_action(&fx, ActionKind::ResumeDeployment, at(0));
        s.create_pending_action(&resume).await.unwrap();
        let text = conflict(
            s.confirm_action(user, resume.id, at(1)).await,
            "failed and changed nothing",
        );
        assert!(text.contains("not paused"), "{text}");
        let failed = s.action(user, resume.id).await.unwrap();
        assert_eq!(failed.status, ActionStatus::Failed);
        assert_eq!(failed.decided_at, Some(at(1)));
        assert!(failed.error.as_deref().unwrap().contains("not paused"));
        assert!(failed.result.is_none());
        assert!(
            s.deployment_controls(deployment, 10)
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            s.get_deployment(deployment).await.unwrap().status,
            DeploymentStatus::Active
        );
        conflict(
            s.confirm_action(user, resume.id, at(2)).await,
            "already failed",
        );
    }

    pub(crate) async fn an_expired_action_is_refused_and_changes_nothing<S: Storage>(s: &S) {
        let fx = seed(s).await.unwrap();
        let (user, deployment) = (fx.user.id, fx.deployment.id);
        let pause = sample_pending_action(&fx, ActionKind::PauseDeployment, at(0));
        s.create_pending_action(&pause).await.unwrap();
        // At its expiry (15 minutes) it can no longer be confirmed; the sweep had not run.
        conflict(s.confirm_action(user, pause.id, at(15)).await, "expired");
        untouched(s, deployment).await;
        // Marked so by the refusal, decided at its expiry, by no one.
        let expired = s.action(user, pause.id).await.unwrap();
        assert_eq!(expired.status, ActionStatus::Expired);
        assert_eq!(expired.decided_at, Some(pause.expires_at));
        assert_eq!(expired.decided_by, None);
        conflict(s.discard_action(user, pause.id, at(16)).await, "expired");

        // The sweep marks the pending ones past their expiry, and only those.
        let old = sample_pending_action(&fx, ActionKind::PauseDeployment, at(20));
        let fresh = sample_pending_action(&fx, ActionKind::PauseDeployment, at(30));
        s.create_pending_action(&old).await.unwrap();
        s.create_pending_action(&fresh).await.unwrap();
        assert_eq!(s.expire_actions(at(40)).await.unwrap(), 1);
        assert_eq!(
            s.action(user, old.id).await.unwrap().status,
            ActionStatus::Expired
        );
        assert_eq!(
            s.action(user, fresh.id).await.unwrap().status,
            ActionStatus::Pending
        );
        assert_eq!(s.expire_actions(at(40)).await.unwrap(), 0);
        // Still in time: the fresh one is confirmed.
        s.confirm_action(user, fresh.id, at(44)).await.unwrap();
        assert_eq!(
            s.get_deployment(deployment).await.unwrap().status,
            DeploymentStatus::Paused
        );
    }

    pub(crate) async fn a_skill_version_is_saved_for_the_owners_skill_only<S: Storage>(s: &S) {
        let mine = seed(s).await.unwrap();
        let theirs = seed(s).await.unwrap();
        let user = mine.user.id;
        let save = sample_pending_action(&mine, ActionKind::SaveSkillVersion, at(0));
        s.create_pending_action(&save).await.unwrap();
        // Nothing saved until confirmed.
        assert_eq!(
            s.latest_skill_version(mine.skill.id).await.unwrap().version,
            1
        );
        let done = s.confirm_action(user, save.id, at(2)).await.unwrap();
        assert_eq!(
            done.result,
            Some(ActionResult::SkillVersion {
                skill_id: mine.skill.id,
                version: 2
            })
        );
        let v2 = s.get_skill_version(mine.skill.id, 2).await.unwrap();
        assert_eq!(v2.model, "builtin/scripted");
        assert_eq!(v2.created_at, at(2));
        // The document carries the number it was saved as.
        assert_eq!(v2.body["version"], 2);
        assert_eq!(v2.body["strategy"], save.arguments["skill"]["strategy"]);

        // Another user's skill: refused when confirmed, marked failed, nothing saved.
        let sneaky = NewPendingAction {
            skill_id: Some(theirs.skill.id),
            ..sample_pending_action(&mine, ActionKind::SaveSkillVersion, at(3))
        };
        s.create_pending_action(&sneaky).await.unwrap();
        conflict(s.confirm_action(user, sneaky.id, at(4)).await, "failed");
        assert_eq!(
            s.action(user, sneaky.id).await.unwrap().status,
            ActionStatus::Failed
        );
        assert_eq!(
            s.latest_skill_version(theirs.skill.id)
                .await
                .unwrap()
                .version,
            1
        );
        // Likewise another user's deployment.
        let theirs_paused = NewPendingAction {
            deployment_id: Some(theirs.deployment.id),
            ..sample_pending_action(&mine, ActionKind::PauseDeployment, at(5))
        };
        s.create_pending_action(&theirs_paused).await.unwrap();
        conflict(
            s.confirm_action(user, theirs_paused.id, at(6)).await,
            "failed",
        );
        assert_eq!(
            s.get_deployment(theirs.deployment.id).await.unwrap().status,
            DeploymentStatus::Active
        );
    }
}

crate::common::on_every_backend!(
    actions;
    actions_are_kept_listed_and_discarded,
    bad_actions_are_refused,
    confirming_applies_a_pause_with_its_audit_row,
    a_refused_change_marks_the_action_failed,
    an_expired_action_is_refused_and_changes_nothing,
    a_skill_version_is_saved_for_the_owners_skill_only,
);

/// Row-level security (PostgreSQL): a user keeps actions in their own name on their own
/// deployments and skills, and sees and decides only their own. Another user's action, asked
/// for by its owner's id, is not found and changes nothing; the owner's confirmation, as the
/// owner, applies it with the audit row naming them, and saves a version of their skill.
#[tokio::test]
async fn a_user_decides_only_their_own_actions() {
    use db::test_support::{at, sample_pending_action, seed};
    use db::{
        ActionKind, ActionStatus, ActionStore, ControlStore, DbError, DeploymentStatus,
        NewPendingAction, RegistryStore,
    };

    let h = crate::common::postgres().await;
    let mine = seed(&h.store).await.unwrap();
    let theirs = seed(&h.store).await.unwrap();
    let me = h.store.as_user(mine.user.id);
    let them = h.store.as_user(theirs.user.id);
    let now = chrono::Utc::now();
    let pause = sample_pending_action(&mine, ActionKind::PauseDeployment, now);
    me.create_pending_action(&pause).await.unwrap();

    let owner = mine.user.id;
    assert!(matches!(
        them.action(owner, pause.id).await,
        Err(DbError::NotFound { .. })
    ));
    assert!(them.actions(owner, 10).await.unwrap().is_empty());
    assert!(
        them.pending_actions(owner, now, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        them.confirm_action(owner, pause.id, now).await,
        Err(DbError::NotFound { .. })
    ));
    assert!(matches!(
        them.discard_action(owner, pause.id, now).await,
        Err(DbError::NotFound { .. })
    ));
    assert_eq!(them.expire_actions(at(100_000)).await.unwrap(), 0);
    assert_eq!(
        h.store
            .get_deployment(mine.deployment.id)
            .await
            .unwrap()
            .status,
        DeploymentStatus::Active
    );
    assert_eq!(
        h.store.action(owner, pause.id).await.unwrap().status,
        ActionStatus::Pending
    );
    // Nor may they keep an action in my name, or one of theirs naming my deployment or skill.
    let in_my_name = sample_pending_action(&mine, ActionKind::PauseDeployment, now);
    assert!(them.create_pending_action(&in_my_name).await.is_err());
    let on_mine = NewPendingAction {
        user_id: theirs.user.id,
        ..sample_pending_action(&mine, ActionKind::PauseDeployment, now)
    };
    assert!(them.create_pending_action(&on_mine).await.is_err());
    let my_skill = NewPendingAction {
        user_id: theirs.user.id,
        ..sample_pending_action(&mine, ActionKind::SaveSkillVersion, now)
    };
    assert!(them.create_pending_action(&my_skill).await.is_err());

    // Mine, as me: applied, audited in my name.
    let done = me.confirm_action(owner, pause.id, now).await.unwrap();
    assert_eq!(done.status, ActionStatus::Confirmed);
    assert_eq!(
        h.store
            .get_deployment(mine.deployment.id)
            .await
            .unwrap()
            .status,
        DeploymentStatus::Paused
    );
    let controls = h
        .store
        .deployment_controls(mine.deployment.id, 10)
        .await
        .unwrap();
    assert_eq!(controls.len(), 1);
    assert_eq!(controls[0].requested_by, owner.to_string());

    // A skill version of my skill, as me.
    let save = sample_pending_action(&mine, ActionKind::SaveSkillVersion, now);
    me.create_pending_action(&save).await.unwrap();
    me.confirm_action(owner, save.id, now).await.unwrap();
    assert_eq!(
        h.store
            .latest_skill_version(mine.skill.id)
            .await
            .unwrap()
            .version,
        2
    );
}
