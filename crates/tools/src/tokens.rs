//! Token counts of the text a model reads, with `o200k_base` (the tokenizer of OpenAI's GPT-4o /
//! GPT-4.1 / GPT-5 families, embedded by `tiktoken-rs`): the recall tools' ceilings are stated
//! and enforced in these tokens.

/// The exact `o200k_base` token count of `text` (special tokens counted as text the model reads).
#[must_use]
pub fn count_tokens(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_with_special_tokens(text)
        .len()
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_o200k_tokens() {
        assert_eq!(super::count_tokens(""), 0);
        assert_eq!(super::count_tokens("hello world"), 2);
    }
}
