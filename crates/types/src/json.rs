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
    use serde_json::json;

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
