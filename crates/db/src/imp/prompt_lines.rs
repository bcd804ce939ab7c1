//! Content-addressed prompt text: the system prompt and user message of a snapshot are stored
//! as references to lines, each distinct line once per deployment.
//!
//! A line is the unit because it is what repeats: a bar table of N rows shifts by one row per
//! tick, so N − 1 of its lines were stored by the tick before; the system prompt's segments and
//! the static sections of the user message repeat whole. `prompt_lines` holds each distinct line
//! of a deployment once (its `prompt_scopes` row numbers them `seq` 0, 1, 2, …, in the order they
//! were first stored); a snapshot's `system_prompt_lines` / `context_lines` blobs list the
//! `seq`s of its text's lines in order, as runs of consecutive numbers (see [`encode_refs`]).
//! Joining the lines gives back the text byte for byte: every line keeps its `\n`, the last one
//! has none when the text does not end in one.
//!
//! New lines of a batch are numbered system prompts first, then user messages, each by line
//! index, then by tick: the newest row of a bar table sits at the same index on every tick, so
//! the rows a batch adds get consecutive numbers, and a table reads back as one or two runs.

use std::collections::HashMap;

use crate::DbError;

/// The lines of `text`, each with its line break (the last one without when `text` does not
/// end in one); none for an empty text.
pub(crate) fn lines(text: &str) -> std::str::SplitInclusive<'_, char> {
    text.split_inclusive('\n')
}

/// FNV-1a (64 bits) of a line, as stored in `prompt_lines.hash`. The hash only finds
/// candidates: a line is reused only when its stored text is equal, so a collision costs a
/// duplicate line, never a wrong one. A fixed, documented function (not std's `DefaultHasher`,
/// whose algorithm may change between releases) keeps lookups finding lines stored by older
/// builds.
pub(crate) fn line_hash(line: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in line.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    i64::from_ne_bytes(h.to_ne_bytes())
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        // Truncation intended: the low seven bits, with the continuation bit.
        out.push((v & 0x7f) as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(blob: &[u8], at: &mut usize) -> Result<u64, DbError> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let Some(&b) = blob.get(*at) else {
            return Err(bad_refs("the list ends inside a number"));
        };
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(bad_refs("a number is longer than 64 bits"))
}

fn bad_refs(detail: &str) -> DbError {
    DbError::Decode {
        column: "prompt line list".to_owned(),
        detail: detail.to_owned(),
    }
}

/// The line numbers of a text as runs of consecutive numbers: for each run, the distance of
/// its first number from the end of the run before (zigzag: it may be negative; the first run
/// counts from 0) and its length less one, both as LEB128 varints. A bar table that shifted by
/// one row is one or two runs, a few bytes.
pub(crate) fn encode_refs(seqs: &[i64]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut prev_end: i64 = 0;
    let mut i = 0;
    while i < seqs.len() {
        let start = seqs[i];
        let mut len: i64 = 1;
        while i + (len as usize) < seqs.len() && seqs[i + len as usize] == start + len {
            len += 1;
        }
        let delta = start.wrapping_sub(prev_end);
        let zigzag = ((delta << 1) ^ (delta >> 63)).cast_unsigned();
        put_varint(&mut out, zigzag);
        put_varint(&mut out, (len - 1).cast_unsigned());
        prev_end = start + len;
        i += len as usize;
    }
    out
}

/// The line numbers [`encode_refs`] wrote.
///
/// # Errors
/// [`DbError::Decode`] for a list cut short, a number out of range or a negative line number.
pub(crate) fn decode_refs(blob: &[u8]) -> Result<Vec<i64>, DbError> {
    let mut seqs = Vec::new();
    let mut at = 0;
    let mut prev_end: i64 = 0;
    while at < blob.len() {
        let zigzag = get_varint(blob, &mut at)?;
        let delta = (zigzag >> 1).cast_signed() ^ -((zigzag & 1).cast_signed());
        let len = get_varint(blob, &mut at)?
            .checked_add(1)
            .and_then(|l| i64::try_from(l).ok())
            .ok_or_else(|| bad_refs("a run is too long"))?;
        let start = prev_end
            .checked_add(delta)
            .filter(|s| *s >= 0)
            .ok_or_else(|| bad_refs("a line number is out of range"))?;
        let end = start
            .checked_add(len)
            .ok_or_else(|| bad_refs("a line number is out of range"))?;
        if seqs.len() as u64 + len.cast_unsigned() > (1 << 24) {
            return Err(bad_refs("more than 16 million lines"));
        }
        seqs.extend(start..end);
        prev_end = end;
    }
    Ok(seqs)
}

/// The text whose line numbers `blob` lists, from `lines` (`seq` → line).
///
/// # Errors
/// [`DbError::Decode`] for a malformed list, [`DbError::Invalid`] when a listed line is not in
/// `lines` (not stored, or not visible to the reader).
pub(crate) fn assemble(
    blob: &[u8],
    lines: &HashMap<i64, String>,
    what: &'static str,
) -> Result<String, DbError> {
    let seqs = decode_refs(blob)?;
    let mut text = String::new();
    for seq in seqs {
        let line = lines.get(&seq).ok_or_else(|| DbError::Invalid {
            what,
            detail: format!("prompt line {seq} is not stored"),
        })?;
        text.push_str(line);
    }
    Ok(text)
}

/// The distinct line numbers of the lists, for one read of `prompt_lines`.
///
/// # Errors
/// [`DbError::Decode`] for a malformed list.
pub(crate) fn wanted_seqs<'a>(
    blobs: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Vec<i64>, DbError> {
    let mut all = std::collections::BTreeSet::new();
    for b in blobs {
        all.extend(decode_refs(b)?);
    }
    Ok(all.into_iter().collect())
}

/// The lines of a batch's texts, each distinct line once: what to look up and store, and each
/// text as indexes into the distinct lines.
#[derive(Debug)]
pub(crate) struct LinePlan<'a> {
    /// Each distinct line, in the order new lines get numbers (line index in its text, then
    /// text).
    pub(crate) distinct: Vec<&'a str>,
    /// Each text as indexes into `distinct`.
    pub(crate) texts: Vec<Vec<u32>>,
}

impl<'a> LinePlan<'a> {
    /// The plan of `texts`: tick by tick, `streams` texts per tick (a snapshot's system
    /// prompt, then its user message). New lines are numbered stream by stream, then by line
    /// index, then by tick, so that a stream's lines (a system prompt, a bar table) get
    /// consecutive numbers.
    pub(crate) fn new(texts: &[&'a str], streams: usize) -> Self {
        let streams = streams.max(1);
        // First the distinct lines with the (line index, text index) of their first use.
        let mut index: HashMap<&'a str, u32> = HashMap::new();
        let mut first: Vec<(&'a str, usize, usize)> = Vec::new();
        let mut raw: Vec<Vec<u32>> = Vec::with_capacity(texts.len());
        for (t, text) in texts.iter().enumerate() {
            let mut refs = Vec::new();
            for (l, line) in lines(text).enumerate() {
                let next = u32::try_from(first.len()).unwrap_or(u32::MAX);
                let i = *index.entry(line).or_insert_with(|| {
                    first.push((line, l, t));
                    next
                });
                refs.push(i);
            }
            raw.push(refs);
        }
        let mut order: Vec<u32> = (0..u32::try_from(first.len()).unwrap_or(u32::MAX)).collect();
        order.sort_by_key(|&i| {
            let (_, l, t) = first[i as usize];
            (t % streams, l, t)
        });
        let mut renumber = vec![0u32; order.len()];
        for (new, &old) in order.iter().enumerate() {
            renumber[old as usize] = u32::try_from(new).unwrap_or(u32::MAX);
        }
        let distinct = order.iter().map(|&i| first[i as usize].0).collect();
        let texts = raw
            .into_iter()
            .map(|refs| refs.into_iter().map(|i| renumber[i as usize]).collect())
            .collect();
        LinePlan { distinct, texts }
    }
}

/// A snapshot's texts as line lists (see [`encode_refs`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct PromptRefs {
    /// The system prompt's lines.
    pub(crate) system_prompt: Vec<u8>,
    /// The user message's lines.
    pub(crate) context: Vec<u8>,
}

/// At most this many values per `IN (…)` list of the line statements.
pub(crate) const LINE_CHUNK: usize = 256;

/// Splits `n` into statement sizes that are powers of two up to [`LINE_CHUNK`] (each statement
/// is prepared once and cached).
pub(crate) fn line_chunks(n: usize) -> impl Iterator<Item = usize> {
    let mut rest = n;
    std::iter::from_fn(move || {
        if rest == 0 {
            return None;
        }
        let size = if rest >= LINE_CHUNK {
            LINE_CHUNK
        } else {
            1 << rest.ilog2()
        };
        rest -= size;
        Some(size)
    })
}

/// `$first, $first+1, …` (`?, ?, …` when not `numbered`) for `n` parameters.
pub(crate) fn params(first: usize, n: usize, numbered: bool) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push_str(", ");
        }
        if numbered {
            let _ = write!(s, "${}", first + i);
        } else {
            s.push('?');
        }
    }
    s
}

/// `INSERT INTO prompt_lines (scope_id, seq, hash, body) VALUES …` for `rows` rows.
pub(crate) fn line_insert_sql(rows: usize, numbered: bool) -> String {
    let mut sql = String::from("INSERT INTO prompt_lines (scope_id, seq, hash, body) VALUES ");
    for r in 0..rows {
        if r > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        sql.push_str(&params(r * 4 + 1, 4, numbered));
        sql.push(')');
    }
    sql
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_shifted_table_is_a_couple_of_runs() {
        let seqs: Vec<i64> = (0..40).chain(100..124).chain([7, 3]).collect();
        let blob = encode_refs(&seqs);
        // Four runs: 0..40, 100..124, 7, 3; two bytes each but one (a jump back of 117).
        assert_eq!(blob.len(), 9);
        assert_eq!(decode_refs(&blob).unwrap(), seqs);
        assert!(encode_refs(&[]).is_empty());
    }

    #[test]
    fn a_damaged_list_is_an_error_naming_it() {
        let err = decode_refs(&[0x80]).unwrap_err();
        assert!(err.to_string().contains("prompt line list"), "{err}");
        // A first run that starts below zero.
        assert!(decode_refs(&[1, 0]).is_err());
    }

    #[test]
    fn new_lines_are_numbered_by_position_then_text() {
        // Two ticks of (system prompt, user message).
        let texts = ["S\nT\n", "a\nb\nx1\n", "S\nT\n", "a\nb\nx2"];
        let plan = LinePlan::new(&texts, 2);
        assert_eq!(
            plan.distinct,
            vec!["S\n", "T\n", "a\n", "b\n", "x1\n", "x2"]
        );
        assert_eq!(plan.texts[3], vec![2, 3, 5]);
        assert!(LinePlan::new(&[""], 2).texts[0].is_empty());
    }

    proptest! {
        #[test]
        fn lists_round_trip(seqs in proptest::collection::vec(0i64..1_000_000, 0..200)) {
            prop_assert_eq!(decode_refs(&encode_refs(&seqs)).unwrap(), seqs);
        }

        #[test]
        fn lines_join_back_to_the_text(text in "[a-c\n]{0,40}") {
            prop_assert_eq!(lines(&text).collect::<String>(), text);
        }
    }
}
