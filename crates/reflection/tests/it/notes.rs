//! Notes after the job: injection mapping, point in time, promotion.

use crate::common;

use common::{DEPLOYMENT, at};
use reflection::{LintResult, NoteDraft, promote_to_skill_scope, to_lessons, visible_note_at};
use rust_decimal_macros::dec;
use types::Uuid;

fn note(generated_at: chrono::DateTime<chrono::Utc>, text: &str, flagged: bool) -> NoteDraft {
    NoteDraft {
        skill_id: Uuid::from_u128(0x5c),
        skill_version: 3,
        deployment_id: Some(DEPLOYMENT),
        generated_at,
        content: types::NoteContent {
            window_start: generated_at - chrono::Duration::days(1),
            window_end: generated_at,
            trades_considered: 5,
            lessons_text: text.to_owned(),
            model_used: "anthropic/claude-haiku-4-5".to_owned(),
            input_tokens: Some(1200),
            output_tokens: Some(150),
            cost_usd: Some(dec!(0.00195)),
            observations: Vec::new(),
            dropped: Vec::new(),
            held: Vec::new(),
        },
        cut: false,
        lint: LintResult {
            flagged,
            reasons: if flagged {
                vec!["bullet 1: x".into()]
            } else {
                Vec::new()
            },
        },
    }
}

#[test]
fn lessons_carry_the_note_and_its_sample() {
    let n = note(at(5, 12, 0), "- a (n=5)", false);
    let l = to_lessons(&n);
    assert_eq!(l.text, "- a (n=5)");
    assert_eq!(l.trades_considered, 5);
    assert_eq!(l.generated_at, at(5, 12, 0));
    assert_eq!(l.window_start, at(4, 12, 0));
    assert_eq!(l.window_end, at(5, 12, 0));
}

#[test]
fn the_visible_note_is_the_latest_unflagged_one_at_or_before_t() {
    let notes = vec![
        note(at(3, 12, 0), "- first", false),
        note(at(4, 12, 0), "- second", false),
        note(at(5, 12, 0), "- flagged", true),
        note(at(6, 12, 0), "- future", false),
    ];
    let text = |t| visible_note_at(&notes, t).map(|n| n.content.lessons_text.as_str());
    assert_eq!(text(at(3, 11, 59)), None);
    assert_eq!(text(at(3, 12, 0)), Some("- first"));
    assert_eq!(text(at(4, 12, 0)), Some("- second"));
    // The flagged note never shows: the previous note stays in force.
    assert_eq!(text(at(5, 18, 0)), Some("- second"));
    assert_eq!(text(at(6, 12, 0)), Some("- future"));
    // Order of the slice does not matter except for exact ties.
    let mut reversed = notes.clone();
    reversed.reverse();
    assert_eq!(
        visible_note_at(&reversed, at(5, 18, 0)).map(|n| n.content.lessons_text.as_str()),
        Some("- second")
    );
}

#[test]
fn promotion_is_explicit_and_starts_at_its_own_time() {
    let n = note(at(5, 12, 0), "- a (n=5)", false);
    let promoted = promote_to_skill_scope(&n, at(7, 9, 0));
    assert_eq!(promoted.deployment_id, None);
    assert_eq!(promoted.generated_at, at(7, 9, 0));
    assert_eq!(promoted.content.lessons_text, n.content.lessons_text);
    assert_eq!(promoted.content.trades_considered, 5);
    assert_eq!(
        (promoted.content.window_start, promoted.content.window_end),
        (n.content.window_start, n.content.window_end)
    );
    assert_eq!(promoted.content.cost_usd, Some(dec!(0)));
    // A backtest before the promotion does not see the skill-scoped copy.
    assert!(visible_note_at(std::slice::from_ref(&promoted), at(6, 0, 0)).is_none());
    // A flagged note stays flagged when promoted.
    let flagged = promote_to_skill_scope(&note(at(5, 12, 0), "- b", true), at(7, 9, 0));
    assert!(!flagged.injectable());
}
