//! What a kept conversation's turn keeps, and the history it gives back.

use agent_runtime::{Message, ToolCall};
use chat::conversation::{
    MAX_KEPT_TOOL_RESULT_CHARS, MIN_KEPT_TOOL_RESULT_CHARS, history, kept_messages, title,
};
use chrono::{TimeZone, Utc};
use uuid::Uuid;

fn call_and_result(n: usize, result_chars: usize) -> Vec<Message> {
    vec![
        Message::Assistant {
            text: None,
            tool_calls: vec![ToolCall {
                id: format!("c{n}"),
                name: "get_my_deployments".into(),
                arguments: "{}".into(),
            }],
        },
        Message::Tool {
            call_id: format!("c{n}"),
            name: "get_my_deployments".into(),
            content: "x".repeat(result_chars),
        },
    ]
}

fn tool_contents(v: &serde_json::Value) -> Vec<String> {
    serde_json::from_value::<Vec<Message>>(v.clone())
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            Message::Tool { content, .. } => Some(content),
            _ => None,
        })
        .collect()
}

#[test]
fn a_long_tool_result_is_cut_with_a_marker() {
    let mut added = call_and_result(0, 10_000);
    added.push(Message::Assistant {
        text: Some("Done.".into()),
        tool_calls: Vec::new(),
    });
    let kept = kept_messages(&added, "Done.");
    let contents = tool_contents(&kept);
    assert_eq!(contents.len(), 1);
    let expected = format!(
        "{}… [cut: {} more characters]",
        "x".repeat(MAX_KEPT_TOOL_RESULT_CHARS),
        10_000 - MAX_KEPT_TOOL_RESULT_CHARS
    );
    assert_eq!(contents[0], expected);
    // A short one stays whole.
    let short = kept_messages(&call_and_result(1, 20), "ok");
    assert_eq!(tool_contents(&short)[0], "x".repeat(20));
}

#[test]
fn a_turn_too_large_keeps_shorter_results_then_only_its_answer() {
    // 80 results of 4,000 characters: over 256 KiB; at 500 characters each, under.
    let added: Vec<Message> = (0..80).flat_map(|n| call_and_result(n, 5_000)).collect();
    let kept = kept_messages(&added, "Done.");
    assert!(kept.to_string().len() <= db::MAX_CONVERSATION_TURN_JSON_BYTES);
    let contents = tool_contents(&kept);
    assert_eq!(contents.len(), 80);
    assert!(contents[0].starts_with(&"x".repeat(MIN_KEPT_TOOL_RESULT_CHARS)));
    assert!(contents[0].ends_with("[cut: 4500 more characters]"));
    // 700 calls: too large even then; the answer alone is kept.
    let added: Vec<Message> = (0..700).flat_map(|n| call_and_result(n, 600)).collect();
    let kept = kept_messages(&added, "Done.");
    assert_eq!(
        serde_json::from_value::<Vec<Message>>(kept).unwrap(),
        [Message::Assistant {
            text: Some("Done.".into()),
            tool_calls: Vec::new()
        }]
    );
}

#[test]
fn history_is_each_turns_message_then_what_it_kept() {
    let at = Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).unwrap();
    let turn = |n: u128, messages: serde_json::Value| db::ConversationTurn {
        id: Uuid::from_u128(n),
        conversation_id: Uuid::from_u128(9),
        user_id: Uuid::from_u128(1),
        seq: 0,
        at,
        user_message: format!("question {n}"),
        answer: format!("answer {n}"),
        messages,
    };
    let kept = kept_messages(
        &[Message::Assistant {
            text: Some("answer 1".into()),
            tool_calls: Vec::new(),
        }],
        "answer 1",
    );
    // A turn whose kept messages do not read back gives its answer.
    let h = history(&[
        turn(1, kept),
        turn(2, serde_json::json!([{"role": "robot"}])),
    ]);
    assert_eq!(
        h,
        [
            Message::User {
                content: "question 1".into()
            },
            Message::Assistant {
                text: Some("answer 1".into()),
                tool_calls: Vec::new()
            },
            Message::User {
                content: "question 2".into()
            },
            Message::Assistant {
                text: Some("answer 2".into()),
                tool_calls: Vec::new()
            },
        ]
    );
}

#[test]
fn a_title_is_the_first_message_on_one_line_cut() {
    assert_eq!(title("How am I\ndoing?"), "How am I doing?");
    let long = title(&"a".repeat(300));
    assert_eq!(long.chars().count(), db::MAX_CONVERSATION_TITLE_CHARS);
    assert!(long.ends_with('…'));
    assert_eq!(title("   "), "(untitled)");
}
