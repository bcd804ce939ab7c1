//! Reading a skill document into a generic [`Value`] with the checks `serde_json::Value` leaves
//! out: a key given twice in one mapping is an error (`serde_json::Value` keeps the last one, so
//! a second `maxLeverage: 20` would silently replace `maxLeverage: 2`), and nesting deeper than
//! [`MAX_SKILL_DEPTH`] is an error. Numbers are kept as `serde_json::Value` keeps them.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// The deepest nesting of mappings and lists a skill document may have. A real skill is about
/// five levels deep; the bound keeps a hostile document from making parsing expensive.
pub const MAX_SKILL_DEPTH: usize = 32;

/// The largest skill document accepted, in bytes. A real skill is a few kilobytes.
pub const MAX_SKILL_BYTES: usize = 256 * 1024;

/// Deserializes one value of the document at `path` (`(root)`, `risk`, `tools.allowed[2]`).
pub(crate) struct Strict<'p> {
    pub(crate) depth: usize,
    pub(crate) path: &'p str,
}

impl Strict<'_> {
    fn child_key(&self, key: &str) -> String {
        if self.depth == 0 {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn enter<E: de::Error>(&self) -> Result<usize, E> {
        let depth = self.depth + 1;
        if depth > MAX_SKILL_DEPTH {
            return Err(E::custom(format!(
                "{}: nested more than {MAX_SKILL_DEPTH} levels deep",
                self.path
            )));
        }
        Ok(depth)
    }
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value of a skill document")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // As `serde_json::Value`: a non-finite number has no JSON form.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let depth = self.enter()?;
        let mut items = Vec::new();
        loop {
            let path = format!("{}[{}]", self.path, items.len());
            match seq.next_element_seed(Strict { depth, path: &path })? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let depth = self.enter()?;
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = self.child_key(&key);
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "{path}: the key `{key}` is given twice (each key once per mapping)"
                )));
            }
            let value = map.next_value_seed(Strict { depth, path: &path })?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// The line (1-based) where the YAML text opens a flow collection (`[`, `{`) nested more than
/// `max` deep, if it does. A linear scan run before the YAML parser, whose handling of deeply
/// nested flow collections is quadratic (a 60 KB document took seconds). Brackets count inside a
/// flow collection, and outside one only where a node starts (after `:`, `-`, `?`, `,` or at the
/// start of a line); quoted scalars and comments are skipped. It may undercount (an anchor before
/// the outermost bracket), never overcount, so a valid document is never refused by it; the
/// depth bound of [`Strict`] still applies to what the parser returns.
pub(crate) fn yaml_flow_too_deep(text: &str, max: usize) -> Option<usize> {
    #[derive(PartialEq)]
    enum Quote {
        No,
        Single,
        Double,
    }
    let (mut depth, mut line, mut prev, mut quote) = (0usize, 1usize, '\n', Quote::No);
    // Whether the previous character was whitespace or a line start (a `#` then opens a comment).
    let mut after_space = true;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\n' {
            line += 1;
        }
        match quote {
            Quote::Double => {
                match c {
                    '\\' => {
                        chars.next();
                    }
                    '"' => quote = Quote::No,
                    _ => {}
                }
                continue;
            }
            Quote::Single => {
                if c == '\'' {
                    if chars.peek() == Some(&'\'') {
                        chars.next();
                    } else {
                        quote = Quote::No;
                    }
                }
                continue;
            }
            Quote::No => {}
        }
        // `,`, `[` and `{` are indicators only inside a flow collection.
        let node_start = matches!(prev, '\n' | ':' | '-' | '?')
            || (depth > 0 && matches!(prev, ',' | '[' | '{'));
        match c {
            '\n' => {
                (prev, after_space) = ('\n', true);
                continue;
            }
            c if c.is_whitespace() => {
                after_space = true;
                continue;
            }
            // A comment runs to the end of the line (`#` after a space or at a line start).
            '#' if after_space => {
                while chars.peek().is_some_and(|&n| n != '\n') {
                    chars.next();
                }
                continue;
            }
            '[' | '{' if depth > 0 || node_start => {
                depth += 1;
                if depth > max {
                    return Some(line);
                }
            }
            ']' | '}' if depth > 0 => depth -= 1,
            '"' if node_start => quote = Quote::Double,
            '\'' if node_start => quote = Quote::Single,
            _ => {}
        }
        (prev, after_space) = (c, false);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::yaml_flow_too_deep;

    #[test]
    fn the_flow_scan_counts_only_what_opens_a_collection() {
        assert_eq!(yaml_flow_too_deep("a: [[[1]]]\n", 3), None);
        assert_eq!(yaml_flow_too_deep("a: 1\nb: [[[[1]]]]\n", 3), Some(2));
        // Inside a flow collection every bracket counts, whatever precedes it.
        assert_eq!(yaml_flow_too_deep("a: [&x [&y [&z [1]]]]", 3), Some(1));
        // Quoted, commented or mid-scalar brackets open nothing.
        for text in [
            "a: '[[[[' # [[[[\n",
            "b: \"[[[[\\\" [[[[\"\n",
            "c: buy [[[[ now\n",
            "d: 'it''s [[[['\n",
        ] {
            assert_eq!(yaml_flow_too_deep(text, 0), None, "{text}");
        }
        // The examples' skill files are well within the bound.
        for name in ["eurusd-sma-cross.yaml", "btc-eth-funding-thesis.yaml"] {
            let path = format!(
                "{}/../../examples/skills/{name}",
                env!("CARGO_MANIFEST_DIR")
            );
            let text = std::fs::read_to_string(path).unwrap();
            assert_eq!(yaml_flow_too_deep(&text, 2), None, "{name}");
        }
    }
}
