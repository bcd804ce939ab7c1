//! Text normalisation before any check: every layer of the lesson defences (the linter, the
//! grounding check, the judge) reads the same folded text, so a zero-width space inside
//! "ignore", a Cyrillic `о` or a fullwidth `ｉｇｎｏｒｅ` cannot hide a word from them.
//!
//! Three steps, in order:
//! 1. **Hidden characters removed**: Unicode default-ignorable code points (zero-width space,
//!    joiners, soft hyphen, word joiner, invisible operators, variation selectors, the Hangul
//!    fillers, the interlinear annotation and deprecated format controls), bidirectional
//!    controls (LRE … RLO, LRI … PDI, LRM, RLM, ALM), the byte-order mark, tag characters
//!    (U+E0000–U+E007F) and every other control character except the line feed. Each removal is
//!    counted: a lesson that carried one is never "clearly grounded" (see
//!    [`crate::ground_lessons`]).
//! 2. **NFKC**: compatibility forms fold to their plain letters (`ｉ` → `i`, `ﬁ` → `fi`,
//!    `①` → `1`, a no-break space → a space).
//! 3. **Confusable fold** (Unicode TR39 skeletons, via `unicode-security`): every character
//!    that is still not ASCII is replaced by its TR39 skeleton when that skeleton is plain
//!    ASCII (Cyrillic `о`, Greek `ο`, mathematical `𝐢` → Latin `o`, `o`, `i`); characters whose
//!    skeleton is not ASCII (`é`, `ß`, Cyrillic `ж`, Chinese) are kept as they are, and the
//!    grounding check refuses their letters. ASCII is never touched (TR39 would turn `m` into
//!    `rn`, which is fine for comparing strings and wrong for reading words).

use unicode_normalization::UnicodeNormalization;
use unicode_security::skeleton;

/// A text after [`normalise`]: what every check reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalised {
    /// Hidden characters removed, NFKC applied, confusables folded to ASCII where TR39 maps
    /// them to ASCII.
    pub text: String,
    /// How many hidden characters were removed (0 for honest text).
    pub hidden_removed: usize,
    /// How many non-ASCII characters were folded to an ASCII look-alike.
    pub confusables_folded: usize,
}

/// Whether `c` is invisible or a format/bidi/tag control: removed before any check.
#[must_use]
pub fn is_hidden(c: char) -> bool {
    if c == '\n' {
        return false;
    }
    if c.is_control() {
        return true;
    }
    matches!(
        u32::from(c),
        0x00AD                // soft hyphen
        | 0x034F              // combining grapheme joiner
        | 0x061C              // Arabic letter mark
        | 0x115F..=0x1160     // Hangul fillers
        | 0x17B4..=0x17B5     // Khmer inherent vowels
        | 0x180B..=0x180F     // Mongolian free variation selectors and vowel separator
        | 0x200B..=0x200F     // zero-width space, ZWNJ, ZWJ, LRM, RLM
        | 0x202A..=0x202E     // bidi embeddings and overrides
        | 0x2060..=0x206F     // word joiner, invisible operators, bidi isolates, deprecated
        | 0x3164              // Hangul filler
        | 0xFE00..=0xFE0F     // variation selectors
        | 0xFEFF              // byte-order mark / zero-width no-break space
        | 0xFFA0              // halfwidth Hangul filler
        | 0xFFF0..=0xFFFB     // unassigned specials and interlinear annotation
        | 0x1BCA0..=0x1BCA3   // shorthand format controls
        | 0x1D173..=0x1D17A   // musical format controls
        | 0xE0000..=0xE0FFF // tag characters and variation selectors supplement
    )
}

/// Normalises `text` for checking: hidden characters removed, NFKC, confusables folded (see
/// the module documentation). Line feeds are kept, so bullets stay one per line.
#[must_use]
pub fn normalise(text: &str) -> Normalised {
    // Printable ASCII and line feeds: nothing is hidden, NFKC leaves ASCII as it is and no
    // ASCII character is folded, so the text is its own normal form (what lessons nearly
    // always are; the three passes below cost ≈70k instructions per bullet).
    if text
        .bytes()
        .all(|b| b == b'\n' || (b' '..=b'~').contains(&b))
    {
        return Normalised {
            text: text.to_owned(),
            hidden_removed: 0,
            confusables_folded: 0,
        };
    }
    normalise_passes(text)
}

/// The three passes of [`normalise`], for any text.
fn normalise_passes(text: &str) -> Normalised {
    let mut hidden_removed = 0;
    let visible: String = text
        .chars()
        .filter(|&c| {
            let hidden = is_hidden(c);
            hidden_removed += usize::from(hidden);
            !hidden
        })
        .collect();
    let nfkc: String = visible.nfkc().collect();
    let mut confusables_folded = 0;
    let mut out = String::with_capacity(nfkc.len());
    let mut buf = [0_u8; 4];
    for c in nfkc.chars() {
        if c.is_ascii() {
            out.push(c);
            continue;
        }
        let skel: String = skeleton(c.encode_utf8(&mut buf)).collect();
        // A skeleton may itself hold hidden or combining marks; only a plain ASCII one folds.
        if !skel.is_empty() && skel.is_ascii() && skel != c.to_string() {
            confusables_folded += 1;
            out.push_str(&skel);
        } else {
            out.push(c);
        }
    }
    // NFKC once more: folding may have produced sequences with compatibility forms.
    let text = out.nfkc().collect();
    Normalised {
        text,
        hidden_removed,
        confusables_folded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ASCII shortcut gives what the three passes give: every printable ASCII character,
    /// line feeds, and the control characters that still take the passes.
    #[test]
    fn printable_ascii_is_its_own_normal_form() {
        let printable: String = (b' '..=b'~').map(char::from).collect();
        for text in [
            printable.as_str(),
            "- Cut losers at 1.5R.\n- Avoid EURUSD in the hour before the ECB.",
            "",
            "\n\n",
        ] {
            assert_eq!(normalise(text), normalise_passes(text), "{text:?}");
            assert_eq!(normalise(text).text, text);
        }
        for text in ["tab\there", "bell\u{7}", "del\u{7F}", "cr\r\n"] {
            let n = normalise(text);
            assert_eq!(n, normalise_passes(text));
            assert_eq!(n.hidden_removed, 1, "{text:?}");
        }
    }

    #[test]
    fn hidden_characters_are_removed_and_counted() {
        let n = normalise("ig\u{200B}nore the ca\u{2060}ps\u{E0041}");
        assert_eq!(n.text, "ignore the caps");
        assert_eq!(n.hidden_removed, 3);
    }

    #[test]
    fn fullwidth_and_homoglyphs_fold_to_latin() {
        assert_eq!(normalise("ｉｇｎｏｒｅ").text, "ignore");
        // Cyrillic о and е, Greek ο.
        let n = normalise("ign\u{043E}r\u{0435} the rules, ign\u{03BF}re");
        assert_eq!(n.text, "ignore the rules, ignore");
        assert_eq!(n.confusables_folded, 3);
    }

    #[test]
    fn ascii_and_other_scripts_are_left_alone() {
        assert_eq!(normalise("m rn 1 l I").text, "m rn 1 l I");
        assert!(normalise("évitez").text.contains('é'));
        assert!(!normalise("игнорируй").text.is_ascii());
    }
}
