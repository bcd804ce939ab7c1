//! [`JsonText`]: a JSON document kept as its text.

/// A JSON document kept as its text: the tick path serialises its steps (and a tool's result)
/// once, straight from typed values, and the store writes the text, with no `serde_json::Value`
/// tree built, cloned, serialised again and dropped on every tick.
///
/// Equality is JSON equality, not text equality: PostgreSQL's `jsonb` hands a document back with
/// its keys reordered and its whitespace normalised, so two texts are equal when they parse to
/// the same value.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct JsonText(Box<serde_json::value::RawValue>);

impl JsonText {
    /// Serialises `value` to compact JSON text.
    ///
    /// # Errors
    /// The serializer's error, e.g. for a map with non-string keys.
    pub fn new<T: serde::Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        serde_json::value::to_raw_value(value).map(JsonText)
    }

    /// Takes `text` as it is after checking that it is one JSON document.
    ///
    /// # Errors
    /// The parser's error when `text` is not JSON.
    pub fn from_text(text: String) -> Result<Self, serde_json::Error> {
        serde_json::value::RawValue::from_string(text).map(JsonText)
    }

    /// The JSON text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// The document as a `serde_json::Value`.
    ///
    /// # Errors
    /// Never for a `JsonText` built by this type (its text is valid JSON); the parser's error
    /// otherwise.
    pub fn to_value(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::from_str(self.as_str())
    }
}

/// Appends `s` as a JSON string, quoted and escaped byte for byte as `serde_json` writes it:
/// `"` and `\\` escaped, the control characters below U+0020 as `\b`, `\t`, `\n`, `\f`, `\r`
/// or `\u00XX` (lowercase hex), everything else as it is. Eight bytes are checked at a time:
/// most of a text needs no escape.
pub fn push_json_string(out: &mut String, s: &str) {
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    const QUOTES: u64 = u64::from_ne_bytes([b'"'; 8]);
    const BACKSLASHES: u64 = u64::from_ne_bytes([b'\\'; 8]);
    const SPACES: u64 = u64::from_ne_bytes([0x20; 8]);
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    // Bytes before `done` are written (or escaped).
    let mut done = 0;
    let (words, _) = bytes.as_chunks::<8>();
    let mut at = 0;
    for word in words {
        let w = u64::from_ne_bytes(*word);
        // Below 0x20: the lane minus 0x20 borrows, seen in its high bit unless it was set.
        let control = w.wrapping_sub(SPACES) & !w & HIGH;
        if control | crate::zero_bytes(w ^ QUOTES) | crate::zero_bytes(w ^ BACKSLASHES) != 0 {
            escape_from(out, s, at, at + 8, &mut done);
        }
        at += 8;
    }
    escape_from(out, s, at, bytes.len(), &mut done);
    out.push_str(&s[done..]);
    out.push('"');
}

/// Escapes the bytes of `s[from..to]` that JSON must escape, writing what came before each
/// since `done`.
fn escape_from(out: &mut String, s: &str, from: usize, to: usize, done: &mut usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (i, &b) in s.as_bytes()[from..to].iter().enumerate() {
        let escaped = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..0x20 => "",
            _ => continue,
        };
        let at = from + i;
        // An ASCII byte is a character boundary.
        out.push_str(&s[*done..at]);
        if escaped.is_empty() {
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        } else {
            out.push_str(escaped);
        }
        *done = at + 1;
    }
}

impl PartialEq for JsonText {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
            || matches!((self.to_value(), other.to_value()), (Ok(a), Ok(b)) if a == b)
    }
}

impl std::fmt::Debug for JsonText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&serde_json::Value> for JsonText {
    /// The value's compact text, as `Value`'s `Display` writes it. (A `Value` always
    /// serialises: its map keys are strings and its numbers finite; the impossible failure would
    /// give `null`.)
    fn from(value: &serde_json::Value) -> Self {
        Self::new(value).unwrap_or_else(|_| JsonText(serde_json::value::RawValue::NULL.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    proptest! {
        /// The same text as `serde_json` writes for the string, for any text (every control
        /// character, quotes, backslashes, multi-byte characters, DEL).
        #[test]
        fn a_string_is_written_as_serde_json_writes_it(s in "(?s:.{0,64})|[\\x00-\\x7f\"\\\\é€]{0,64}") {
            let mut out = String::from("x");
            push_json_string(&mut out, &s);
            prop_assert_eq!(&out[1..], serde_json::to_string(&s).unwrap());
        }
    }

    /// A tool message a model reads is the result's `Display` text, byte for byte.
    #[test]
    fn the_text_of_a_value_is_its_display_text() {
        let values = [
            json!({
                "status": "recorded",
                "proposal": {"action": "open_long", "symbol": "BTC", "size_usd": "2500.00",
                             "reason": "say \"hi\"\n\t\u{7}\u{2028} → é", "confidence": 70,
                             "stop": null},
                "note": "Recorded, not executed.",
            }),
            json!({"error": "propose_order: reason: must not be blank"}),
            json!([1, -2.5, 1e300, true, null, "", {}]),
            json!("plain"),
        ];
        for v in values {
            assert_eq!(JsonText::from(&v).as_str(), v.to_string());
        }
    }
}
