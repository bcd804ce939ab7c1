//! Kept chat conversations on every backend: turns are numbered in order, read back newest-N
//! oldest first, listed most recently active first, deleted with their turns, purged after
//! they went idle; a wrong owner finds none of it. On PostgreSQL, row-level security keeps a
//! user out of another's conversation even when the code asks for it by the owner's id.

pub(crate) mod cases {
    use db::test_support::{at, seed};
    use db::{ConversationStore, ConversationTurn, DbError, NewConversation, RegistryStore};
    use serde_json::json;
    use uuid::Uuid;

    pub(crate) fn conversation(user: Uuid, n: u128, minute: i64) -> NewConversation {
        NewConversation {
            id: Uuid::from_u128(0xC000 + n),
            user_id: user,
            mode: "coach".into(),
            deployment_id: None,
            title: format!("conversation {n}"),
            at: at(minute),
        }
    }

    /// The ids of `user`'s conversations as listed.
    async fn listed<S: ConversationStore>(s: &S, user: Uuid) -> Vec<Uuid> {
        s.conversations(user, 10)
            .await
            .unwrap()
            .iter()
            .map(|c| c.id)
            .collect()
    }

    pub(crate) fn turn(c: &NewConversation, n: u128, minute: i64) -> ConversationTurn {
        ConversationTurn {
            id: Uuid::from_u128(0x7000 + n),
            conversation_id: c.id,
            user_id: c.user_id,
            seq: 99,
            at: at(minute),
            user_message: format!("message {n}"),
            answer: format!("answer {n}"),
            messages: json!([{"role": "assistant", "text": format!("answer {n}"), "tool_calls": []}]),
        }
    }

    pub(crate) async fn turns_are_kept_in_order_and_listed_by_activity<
        S: ConversationStore + RegistryStore,
    >(
        s: &S,
    ) {
        let fx = seed(s).await.unwrap();
        let user = fx.user.id;
        let first = NewConversation {
            deployment_id: Some(fx.deployment.id),
            ..conversation(user, 1, 0)
        };
        let second = conversation(user, 2, 5);
        s.start_conversation(&first).await.unwrap();
        s.start_conversation(&second).await.unwrap();
        // Two turns in the first: numbered 0 and 1 whatever the caller put in `seq`.
        assert_eq!(
            s.add_conversation_turn(&turn(&first, 1, 10)).await.unwrap(),
            0
        );
        assert_eq!(
            s.add_conversation_turn(&turn(&first, 2, 20)).await.unwrap(),
            1
        );

        let c = s.conversation(user, first.id).await.unwrap();
        assert_eq!(c.turns, 2);
        assert_eq!(c.last_turn_at, Some(at(20)));
        assert_eq!(c.deployment_id, Some(fx.deployment.id));
        assert_eq!(c.title, "conversation 1");
        let fresh = s.conversation(user, second.id).await.unwrap();
        assert_eq!((fresh.turns, fresh.last_turn_at), (0, None));
        assert_eq!(fresh.last_active_at(), at(5));

        // Most recently active first: the first (turn at 20) before the second (started at 5).
        assert_eq!(listed(s, user).await, [first.id, second.id]);

        // The newest N turns, oldest first, as written.
        let turns = s.conversation_turns(user, first.id, 10).await.unwrap();
        assert_eq!(turns.len(), 2);
        assert_eq!(turns[0].user_message, "message 1");
        assert_eq!(turns[1].seq, 1);
        assert_eq!(turns[1].messages, turn(&first, 2, 20).messages);
        let last = s.conversation_turns(user, first.id, 1).await.unwrap();
        assert_eq!(last.len(), 1);
        assert_eq!(last[0].answer, "answer 2");

        // A wrong owner finds nothing.
        let stranger = Uuid::from_u128(0xBAD);
        assert!(matches!(
            s.conversation(stranger, first.id).await,
            Err(DbError::NotFound { .. })
        ));
        assert!(s.conversations(stranger, 10).await.unwrap().is_empty());
        assert!(
            s.conversation_turns(stranger, first.id, 10)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(!s.delete_conversation(stranger, first.id).await.unwrap());

        // Bounds.
        let bad = NewConversation {
            mode: "chat".into(),
            ..conversation(user, 3, 0)
        };
        assert!(matches!(
            s.start_conversation(&bad).await,
            Err(DbError::Invalid { .. })
        ));
        let empty = ConversationTurn {
            user_message: String::new(),
            ..turn(&first, 3, 30)
        };
        assert!(matches!(
            s.add_conversation_turn(&empty).await,
            Err(DbError::Bound { .. })
        ));
        let not_a_list = ConversationTurn {
            messages: json!({"role": "user"}),
            ..turn(&first, 4, 30)
        };
        assert!(matches!(
            s.add_conversation_turn(&not_a_list).await,
            Err(DbError::Invalid { .. })
        ));

        // Deleting takes the turns along.
        assert!(s.delete_conversation(user, first.id).await.unwrap());
        assert!(
            s.conversation_turns(user, first.id, 10)
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(s.conversations(user, 10).await.unwrap().len(), 1);
    }

    pub(crate) async fn idle_conversations_are_purged<S: ConversationStore + RegistryStore>(s: &S) {
        let fx = seed(s).await.unwrap();
        let user = fx.user.id;
        let old = conversation(user, 1, 0);
        let busy = conversation(user, 2, 0);
        let new = conversation(user, 3, 50);
        for c in [&old, &busy, &new] {
            s.start_conversation(c).await.unwrap();
        }
        s.add_conversation_turn(&turn(&old, 1, 10)).await.unwrap();
        s.add_conversation_turn(&turn(&busy, 2, 10)).await.unwrap();
        s.add_conversation_turn(&turn(&busy, 3, 60)).await.unwrap();
        // Idle before minute 40: `old` (last turn at 10); `busy` went on at 60, `new` began at
        // 50.
        assert_eq!(s.purge_conversations(at(40)).await.unwrap(), 1);
        assert_eq!(listed(s, user).await, [busy.id, new.id]);
        assert!(
            s.conversation_turns(user, old.id, 10)
                .await
                .unwrap()
                .is_empty()
        );
    }
}

crate::common::on_every_backend!(
    conversations;
    turns_are_kept_in_order_and_listed_by_activity,
    idle_conversations_are_purged,
);

/// Row-level security (PostgreSQL): a user reads, continues and deletes their own
/// conversations only. Asked for another's by its owner's id (a bug in the caller), the
/// database still shows nothing and refuses the write.
#[tokio::test]
async fn a_user_reaches_only_their_own_conversations() {
    use db::test_support::seed;
    use db::{ConversationStore, ConversationTurn, DbError};

    use self::cases::{conversation, turn};

    let h = crate::common::postgres().await;
    let mine = seed(&h.store).await.unwrap();
    let theirs = seed(&h.store).await.unwrap();
    let me = h.store.as_user(mine.user.id);
    let them = h.store.as_user(theirs.user.id);
    let their_conversation = conversation(theirs.user.id, 1, 0);
    them.start_conversation(&their_conversation).await.unwrap();
    them.add_conversation_turn(&turn(&their_conversation, 1, 5))
        .await
        .unwrap();

    let owner = theirs.user.id;
    let id = their_conversation.id;
    assert!(matches!(
        me.conversation(owner, id).await,
        Err(DbError::NotFound { .. })
    ));
    assert!(me.conversations(owner, 10).await.unwrap().is_empty());
    assert!(
        me.conversation_turns(owner, id, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(!me.delete_conversation(owner, id).await.unwrap());
    assert_eq!(
        me.purge_conversations(db::test_support::at(100))
            .await
            .unwrap(),
        0
    );
    // Neither a turn in their conversation, nor a conversation in their name.
    let sneaked = ConversationTurn {
        id: uuid::Uuid::from_u128(0x5EE),
        ..turn(&their_conversation, 2, 6)
    };
    assert!(me.add_conversation_turn(&sneaked).await.is_err());
    assert!(
        me.start_conversation(&conversation(owner, 2, 0))
            .await
            .is_err()
    );
    // A turn of mine in their conversation breaks the owner key.
    let mine_in_theirs = ConversationTurn {
        user_id: mine.user.id,
        ..sneaked.clone()
    };
    assert!(me.add_conversation_turn(&mine_in_theirs).await.is_err());
    // Theirs is intact.
    let c = them.conversation(owner, id).await.unwrap();
    assert_eq!(c.turns, 1);
    assert!(them.delete_conversation(owner, id).await.unwrap());
}
