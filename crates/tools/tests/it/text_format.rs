//! `push_one_line` is `split_whitespace` joined by one space.

use proptest::prelude::*;
use tools::{one_line, push_one_line};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn push_one_line_joins_the_words_by_one_space(
        text in r"[ a-zA-Z#\t\n\r\x0b\x0c\x7f\u{85}\u{a0}\u{2028}\u{3000}é→]{0,60}",
    ) {
        let reference = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut out = String::from(">");
        push_one_line(&mut out, &text);
        prop_assert_eq!(&out[1..], reference.as_str());
        prop_assert_eq!(one_line(&text), reference);
    }
}

#[test]
fn edge_cases_join_as_split_whitespace_does() {
    for text in ["", " ", "a", " a", "a ", "a  b", "a b", "a\tb", "\u{a0}"] {
        assert_eq!(
            one_line(text),
            text.split_whitespace().collect::<Vec<_>>().join(" ")
        );
    }
}
