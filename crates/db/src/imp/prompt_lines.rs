//! Content-addressed snapshot text: the system prompt, user message and steps of a snapshot are
//! stored as references to lines, each distinct line once per deployment.
//!
//! A line is the unit because it is what repeats: a bar table of N rows shifts by one row per
//! tick, so N − 1 of its lines were stored by the tick before; the system prompt's segments, the
//! static sections of the user message and the (compact, one-line) JSON of the model loop's
//! steps repeat whole. Lines are numbered per deployment (its
//! `prompt_scopes` row: `seq` 0, 1, 2, …, in the order they were first stored); a snapshot's
//! `*_lines` blobs list the `seq`s of its texts' lines in order, as runs of consecutive numbers
//! (see [`encode_refs`]). Joining the lines gives back the text byte for byte: every line keeps
//! its `\n`, the last one has none when the text does not end in one.
//!
//! The new lines of a write are stored together, as one `prompt_blocks` row: a zstd frame of
//! their lengths and their bytes ([`encode_block`]). What stays new on every tick (the time, the
//! newest bar, the portfolio and caps lines) is numbers next to numbers, which compress well
//! only together.
//!
//! Which lines are stored already is known from the writer's memory ([`LineCache`]: per
//! deployment, the lines of its last writes, and their numbers), never looked up in the
//! database: a line the cache does not hold is stored again (a second copy, never a wrong
//! one), e.g. once after the process restarts. A write's lines enter the cache only after its
//! transaction committed, so the cache never names a line that is not stored.
//!
//! New lines of a write are numbered stream by stream (system prompts, then user messages, then
//! steps), then by line index, then by tick: the newest row of a bar table sits at the same index
//! on every tick, so the rows a batch adds get consecutive numbers, and a table reads back as
//! one or two runs.

use std::collections::HashMap;

use rustc_hash::FxHashMap;

use crate::DbError;

#[inline]
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    // Most numbers of a line list (run lengths, short jumps) are one byte.
    if v < 0x80 {
        out.push(v as u8);
        return;
    }
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
/// one row is one or two runs, a few bytes. One pass over the numbers, which need not be
/// collected first.
pub(crate) fn encode_refs(seqs: impl IntoIterator<Item = i64>) -> Vec<u8> {
    // A list is a few bytes a run; a message of a dozen runs fits without growing.
    let mut out = Vec::with_capacity(64);
    let mut prev_end: i64 = 0;
    let mut run = |out: &mut Vec<u8>, start: i64, end: i64| {
        let delta = start.wrapping_sub(prev_end);
        let zigzag = ((delta << 1) ^ (delta >> 63)).cast_unsigned();
        put_varint(out, zigzag);
        put_varint(out, (end - start - 1).cast_unsigned());
        prev_end = end;
    };
    let mut seqs = seqs.into_iter();
    let Some(first) = seqs.next() else {
        return out;
    };
    let (mut start, mut end) = (first, first + 1);
    for s in seqs {
        if s == end {
            end += 1;
        } else {
            run(&mut out, start, end);
            (start, end) = (s, s + 1);
        }
    }
    run(&mut out, start, end);
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

/// The distinct line numbers of the lists, for one read of their blocks.
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

/// A byte offset in a text as stored in a plan (texts are far below 4 GiB: a snapshot's text
/// is bounded by the tick's inputs).
fn offset(at: usize) -> u32 {
    u32::try_from(at).unwrap_or(u32::MAX)
}

/// How many bytes `a` and `b` have in common from their start: sixteen bytes compared at a
/// time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (wide_a, _) = a[..n].as_chunks::<16>();
    let (wide_b, _) = b[..n].as_chunks::<16>();
    let mut same = 0;
    for (x, y) in wide_a.iter().zip(wide_b) {
        let diff = u128::from_le_bytes(*x) ^ u128::from_le_bytes(*y);
        if diff != 0 {
            return same + (diff.trailing_zeros() / 8) as usize;
        }
        same += 16;
    }
    same + a[same..n]
        .iter()
        .zip(&b[same..n])
        .take_while(|(x, y)| x == y)
        .count()
}

/// Where line `j` of a text starts, given where its lines end.
fn line_start(ends: &[u32], j: usize) -> usize {
    j.checked_sub(1).map_or(0, |i| ends[i] as usize)
}

/// The end (exclusive) of the lines of `was` from its line `j` on that `text`, read from its
/// byte `pos` (a line start), repeats whole: `j` when not even line `j` does. `was_ends` are
/// where `was`' lines end. A last line without a line break is the same line only where
/// `text` ends too.
fn equal_lines(text: &[u8], pos: usize, was: &[u8], was_ends: &[u32], j: usize) -> usize {
    let from = line_start(was_ends, j);
    let same = common_prefix(&text[pos..], &was[from..]);
    let mut k = j;
    while let Some(&end) = was_ends.get(k) {
        let len = end as usize - from;
        if len > same || (was[end as usize - 1] != b'\n' && pos + len != text.len()) {
            break;
        }
        k += 1;
    }
    k
}

/// Where a line of a plan's texts is: the text's index, the line's first and end byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineAt {
    text: u32,
    start: u32,
    end: u32,
}

/// The lines of a batch's texts, each distinct line once: what to find in the cache or store,
/// and each text as indexes into the distinct lines. It holds positions, not the texts: it
/// can be made on one thread and used on another, with the same texts
/// ([`LinePlan::lines`]).
#[derive(Debug, Clone)]
pub(crate) struct LinePlan {
    /// Each distinct line, in the order new lines get numbers (line index in its text, then
    /// text), as its first occurrence.
    distinct: Vec<LineAt>,
    /// Each text as indexes into the distinct lines.
    pub(crate) texts: Vec<Vec<u32>>,
}

impl LinePlan {
    /// The distinct lines, read from `texts`: the texts the plan was made of (any other text
    /// gives the empty line where a position falls outside it or off a character boundary).
    pub(crate) fn lines<'a>(&self, texts: &[&'a str]) -> Vec<&'a str> {
        self.distinct
            .iter()
            .map(|at| {
                texts
                    .get(at.text as usize)
                    .and_then(|t| t.get(at.start as usize..at.end as usize))
                    .unwrap_or_default()
            })
            .collect()
    }

    /// The plan of `texts`: tick by tick, `streams` texts per tick (a snapshot's system
    /// prompt, then its user message). New lines are numbered stream by stream, then by line
    /// index, then by tick, so that a stream's lines (a system prompt, a bar table) get
    /// consecutive numbers.
    pub(crate) fn new(texts: &[&str], streams: usize) -> Self {
        let streams = streams.max(1);
        // First the distinct lines with the (line index, text index) of their first use.
        let mut index: FxHashMap<&str, u32> =
            FxHashMap::with_capacity_and_hasher(texts.len() * 16, rustc_hash::FxBuildHasher);
        let mut first: Vec<(LineAt, usize)> = Vec::with_capacity(texts.len() * 16);
        let mut raw: Vec<Vec<u32>> = Vec::with_capacity(texts.len());
        // Where each text's lines end (byte offsets, exclusive), beside `raw`.
        let mut ends: Vec<Vec<u32>> = Vec::with_capacity(texts.len());
        for (t, text) in texts.iter().enumerate() {
            // The same text as the tick before in this stream (a system prompt, the steps of a
            // rule-based model): its lines without splitting and hashing it again.
            if let Some(before) = t.checked_sub(streams)
                && texts[before] == *text
            {
                let (same, at) = (raw[before].clone(), ends[before].clone());
                raw.push(same);
                ends.push(at);
                continue;
            }
            // The same stream's text of the tick before: about as many lines, most of them
            // at the same index or one away (a bar table that slid by a row). Where the bytes
            // from a line of this text on equal those from a line there, every whole line of
            // that stretch is the line there (every distinct line has one index): found by
            // comparing bytes in wide words, without splitting or hashing them.
            let before = t
                .checked_sub(streams)
                .map(|b| (texts[b].as_bytes(), raw[b].as_slice(), ends[b].as_slice()));
            let capacity = before.map_or(16, |(_, refs, _)| refs.len() + 2);
            let (mut refs, mut at) = (Vec::with_capacity(capacity), Vec::with_capacity(capacity));
            let bytes = text.as_bytes();
            let mut pos = 0;
            let mut shift = 0_isize;
            while pos < bytes.len() {
                let l = refs.len();
                if let Some((was, was_refs, was_ends)) = before
                    && let Some((j, k, s)) = [shift, 0, 1, -1].into_iter().find_map(|s| {
                        let j = l.checked_add_signed(s).filter(|&j| j < was_refs.len())?;
                        let k = equal_lines(bytes, pos, was, was_ends, j);
                        (k > j).then_some((j, k, s))
                    })
                {
                    let from = line_start(was_ends, j);
                    refs.extend_from_slice(&was_refs[j..k]);
                    at.extend(
                        was_ends[j..k]
                            .iter()
                            .map(|&e| offset(e as usize - from + pos)),
                    );
                    pos += was_ends[k - 1] as usize - from;
                    shift = s;
                    continue;
                }
                // A line of its own: by its hash.
                let end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i + 1);
                // A `\n` is one byte of its own in UTF-8: every cut is at a character boundary.
                let line = text.get(pos..end).unwrap_or_default();
                let next = u32::try_from(first.len()).unwrap_or(u32::MAX);
                refs.push(*index.entry(line).or_insert_with(|| {
                    let at = LineAt {
                        text: offset(t),
                        start: offset(pos),
                        end: offset(end),
                    };
                    first.push((at, l));
                    next
                }));
                at.push(offset(end));
                pos = end;
            }
            raw.push(refs);
            ends.push(at);
        }
        // Ordered by (stream, line index, text): a stable counting sort by (stream, line
        // index), since `first` is in (text, line index) order already, each bucket's lines are
        // in text order.
        let width = first.iter().map(|&(_, l)| l + 1).max().unwrap_or(0);
        let stream = |at: LineAt| at.text as usize % streams;
        let mut starts = vec![0_usize; streams * width + 1];
        for &(at, l) in &first {
            starts[stream(at) * width + l + 1] += 1;
        }
        for b in 1..starts.len() {
            starts[b] += starts[b - 1];
        }
        let mut order = vec![0_u32; first.len()];
        let mut renumber = vec![0_u32; first.len()];
        for (i, &(line, l)) in first.iter().enumerate() {
            let at = &mut starts[stream(line) * width + l];
            // Both fit: there are at most `u32::MAX` distinct lines (their indexes are `u32`).
            order[*at] = u32::try_from(i).unwrap_or(u32::MAX);
            renumber[i] = u32::try_from(*at).unwrap_or(u32::MAX);
            *at += 1;
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
    /// The steps' JSON.
    pub(crate) steps: Vec<u8>,
}

/// Texts per snapshot in a [`LinePlan`]: system prompt, user message, steps (the proposal and
/// the verdict stay JSON columns: small, and what one queries in SQL).
pub(crate) const SNAPSHOT_STREAMS: usize = 3;

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

/// zstd level of the blocks: the fastest. On the README main command's blocks level 1 gives
/// 445 kB, zstd's default 3 gives 449 kB, 5 gives 443 kB (the lines are short and repeat
/// little once deduplicated): higher levels only cost the writer's time.
const BLOCK_LEVEL: i32 = 1;

/// A block holds at most this many bytes once decompressed (a damaged or hostile frame must not
/// make a reader allocate more; the largest write, a conversion batch of 256 snapshots, holds
/// a few megabytes of new lines).
pub(crate) const MAX_BLOCK_BYTES: u64 = 1 << 28;

fn bad_block(detail: impl std::fmt::Display) -> DbError {
    DbError::Decode {
        column: "prompt_blocks.body".to_owned(),
        detail: detail.to_string(),
    }
}

/// A `prompt_blocks.body`: one zstd frame of each line's length (LEB128), then the lines.
///
/// # Errors
/// [`DbError::Invalid`] when zstd fails (it does not on memory it was given).
pub(crate) fn encode_block<'a>(
    lines: impl Iterator<Item = &'a str> + Clone,
) -> Result<Vec<u8>, DbError> {
    // Allocated once: the lines' bytes and a length of at most three bytes a line (a longer
    // line only grows it).
    let (count, bytes) = lines.clone().fold((0, 0), |(n, b), l| (n + 1, b + l.len()));
    let mut raw = Vec::with_capacity(bytes + 3 * count);
    for l in lines.clone() {
        put_varint(&mut raw, l.len() as u64);
    }
    for l in lines {
        raw.extend_from_slice(l.as_bytes());
    }
    zstd::bulk::compress(&raw, BLOCK_LEVEL).map_err(|e| DbError::Invalid {
        what: "prompt block",
        detail: format!("compressing: {e}"),
    })
}

/// The `count` lines of a block [`encode_block`] wrote.
///
/// # Errors
/// [`DbError::Decode`] for a frame that is not zstd, larger than [`MAX_BLOCK_BYTES`], or whose
/// content is not `count` lengths and as many UTF-8 lines.
pub(crate) fn decode_block(body: &[u8], count: i64) -> Result<Vec<String>, DbError> {
    let size = match zstd::zstd_safe::get_frame_content_size(body) {
        Ok(Some(n)) if n <= MAX_BLOCK_BYTES => n,
        Ok(Some(n)) => return Err(bad_block(format!("{n} bytes decompressed is too many"))),
        Ok(None) | Err(_) => return Err(bad_block("not a zstd frame with its size")),
    };
    let raw = zstd::bulk::decompress(body, usize::try_from(size).map_err(bad_block)?)
        .map_err(|e| bad_block(format!("decompressing: {e}")))?;
    let count = usize::try_from(count).map_err(|_| bad_block("a negative line count"))?;
    let mut at = 0;
    let mut lens = Vec::with_capacity(count.min(raw.len()));
    for _ in 0..count {
        let len = get_varint(&raw, &mut at).map_err(|_| bad_block("a line length is cut short"))?;
        lens.push(usize::try_from(len).map_err(bad_block)?);
    }
    let mut lines = Vec::with_capacity(lens.len());
    for len in lens {
        let end = at
            .checked_add(len)
            .filter(|e| *e <= raw.len())
            .ok_or_else(|| bad_block("a line runs past the block"))?;
        let line = std::str::from_utf8(&raw[at..end]).map_err(bad_block)?;
        lines.push(line.to_owned());
        at = end;
    }
    if at != raw.len() {
        return Err(bad_block("bytes after the last line"));
    }
    Ok(lines)
}

/// The first line numbers of the blocks that hold `wanted` (sorted, distinct), from every
/// block's `(first_seq, line_count)` in `first_seq` order up to the last wanted line.
///
/// # Errors
/// [`DbError::Invalid`] when a wanted line is in no block.
pub(crate) fn blocks_holding(
    blocks: &[(i64, i64)],
    wanted: &[i64],
    what: &'static str,
) -> Result<Vec<(i64, i64)>, DbError> {
    let mut out: Vec<(i64, i64)> = Vec::new();
    for &seq in wanted {
        if out
            .last()
            .is_some_and(|&(f, c)| seq >= f && seq < f.saturating_add(c))
        {
            continue;
        }
        let i = blocks.partition_point(|&(f, _)| f <= seq);
        match i.checked_sub(1).map(|i| blocks[i]) {
            Some((f, c)) if seq < f.saturating_add(c) => out.push((f, c)),
            _ => {
                return Err(DbError::Invalid {
                    what,
                    detail: format!("prompt line {seq} is not stored"),
                });
            }
        }
    }
    Ok(out)
}

/// The writer's memory of which lines each deployment's scope holds: per scope
/// (`prompt_scopes.id`, never reused), the lines of its committed writes and their numbers, at
/// most [`SCOPE_LINES`] (past that, only the last write's lines are kept), within a budget of
/// [`CACHE_BYTES`] for all scopes (past it, the least recently written scopes are forgotten
/// first: a live runner's thousands of deployments keep ≈15 kB each, their last tick's lines).
/// Cheap to clone (one memory shared by the clones of a store).
#[derive(Debug, Clone, Default)]
pub(crate) struct LineCache(std::sync::Arc<std::sync::Mutex<CacheInner>>);

#[derive(Debug, Default)]
struct CacheInner {
    scopes: HashMap<i64, ScopeLines>,
    /// Scope ids by their last write, oldest first.
    lru: std::collections::BTreeMap<u64, i64>,
    /// Counts writes: a line's last write, a scope's last write.
    clock: u64,
    /// What the lines of every scope take, as [`entry_bytes`] counts it.
    bytes: usize,
    /// [`CACHE_BYTES`], or a test's budget (0 means the default).
    budget: usize,
}

#[derive(Debug, Default)]
struct ScopeLines {
    /// Line → (its number, the last write that used it).
    lines: FxHashMap<Box<str>, (i64, u64)>,
    used: u64,
    bytes: usize,
}

/// Memory the lines of a [`LineCache`] may take, all scopes together.
pub(crate) const CACHE_BYTES: usize = 64 << 20;

/// Lines a [`LineCache`] keeps per scope beyond its last write's (≈100 bytes each): a backtest's
/// batch holds ≈2,700 distinct lines, a live tick ≈100.
pub(crate) const SCOPE_LINES: usize = 2048;

/// What a cached line takes: its text, the box and the map entry.
fn entry_bytes(line: &str) -> usize {
    line.len() + 48
}

/// One scope's lines of a write, with their numbers.
type ScopeWrite = Vec<(Box<str>, i64)>;

/// A write's lines and their numbers, for the cache once the write committed.
#[derive(Debug, Default)]
pub(crate) struct CacheUpdate {
    scopes: Vec<(i64, ScopeWrite)>,
}

impl CacheUpdate {
    /// Adds scope `scope`'s lines of one write (they replace what the cache held for it).
    pub(crate) fn add(&mut self, scope: i64, lines: &[&str], seqs: &[i64]) {
        let lines = lines
            .iter()
            .zip(seqs)
            .map(|(l, s)| (Box::<str>::from(*l), *s))
            .collect();
        self.scopes.push((scope, lines));
    }
}

impl LineCache {
    fn inner(&self) -> std::sync::MutexGuard<'_, CacheInner> {
        // A poisoned lock only means another thread panicked while holding it: the maps are
        // whole (every change is one insert or remove).
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The numbers of `lines` the cache knows for `scope`, below `next_seq` (the scope's next
    /// number as just read: anything at or above it is not stored, whatever the cache says).
    pub(crate) fn lookup(&self, scope: i64, next_seq: i64, lines: &[&str]) -> Vec<Option<i64>> {
        let inner = self.inner();
        match inner.scopes.get(&scope) {
            Some(known) => lines
                .iter()
                .map(|l| {
                    known
                        .lines
                        .get(*l)
                        .map(|(s, _)| *s)
                        .filter(|s| *s < next_seq)
                })
                .collect(),
            None => vec![None; lines.len()],
        }
    }

    /// Remembers a committed write's lines.
    pub(crate) fn remember(&self, update: CacheUpdate) {
        let mut guard = self.inner();
        let CacheInner {
            scopes,
            lru,
            clock,
            bytes,
            budget,
        } = &mut *guard;
        let budget = if *budget == 0 { CACHE_BYTES } else { *budget };
        for (scope, lines) in update.scopes {
            *clock += 1;
            let now = *clock;
            let known = scopes.entry(scope).or_default();
            lru.remove(&known.used);
            lru.insert(now, scope);
            known.used = now;
            for (line, seq) in lines {
                let size = entry_bytes(&line);
                if known.lines.insert(line, (seq, now)).is_none() {
                    known.bytes += size;
                    *bytes += size;
                }
            }
            if known.lines.len() > SCOPE_LINES {
                known.lines.retain(|_, (_, at)| *at == now);
                let kept = known.lines.keys().map(|l| entry_bytes(l)).sum();
                *bytes = bytes.saturating_sub(known.bytes) + kept;
                known.bytes = kept;
            }
            // Over budget: forget the least recently written scopes, never the one just
            // written.
            while *bytes > budget {
                let Some((&used, &oldest)) = lru.iter().next() else {
                    break;
                };
                if oldest == scope {
                    break;
                }
                lru.remove(&used);
                if let Some(gone) = scopes.remove(&oldest) {
                    *bytes = bytes.saturating_sub(gone.bytes);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The lines of `text`, each with its line break (the last one without when `text` does not
    /// end in one); none for an empty text. (The reference the plan is tested against.)
    fn lines(text: &str) -> impl Iterator<Item = &str> {
        // `str::split_inclusive` with SIMD search: the texts are ≈9 kB per tick.
        let mut breaks = memchr::memchr_iter(b'\n', text.as_bytes());
        let mut start = 0;
        std::iter::from_fn(move || {
            if start >= text.len() {
                return None;
            }
            // A `\n` is one byte of its own in UTF-8: every cut is at a character boundary.
            let end = breaks.next().map_or(text.len(), |i| i + 1);
            let line = text.get(start..end);
            start = end;
            line
        })
    }

    /// The plan as first written: every line hashed, numbered by (stream, line index, tick) of
    /// its first use.
    fn hashed_plan<'a>(texts: &[&'a str], streams: usize) -> (Vec<&'a str>, Vec<Vec<u32>>) {
        let mut index: HashMap<&str, u32> = HashMap::new();
        let mut first: Vec<(&str, usize, usize)> = Vec::new();
        let raw: Vec<Vec<u32>> = texts
            .iter()
            .enumerate()
            .map(|(t, text)| {
                lines(text)
                    .enumerate()
                    .map(|(l, line)| {
                        let next = first.len() as u32;
                        *index.entry(line).or_insert_with(|| {
                            first.push((line, l, t));
                            next
                        })
                    })
                    .collect()
            })
            .collect();
        let mut order: Vec<usize> = (0..first.len()).collect();
        order.sort_by_key(|&i| (first[i].2 % streams, first[i].1, first[i].2));
        let mut renumber = vec![0u32; order.len()];
        for (new, &old) in order.iter().enumerate() {
            renumber[old] = new as u32;
        }
        let distinct = order.iter().map(|&i| first[i].0).collect();
        let lists = raw
            .into_iter()
            .map(|r| r.into_iter().map(|i| renumber[i as usize]).collect())
            .collect();
        (distinct, lists)
    }

    #[test]
    fn a_shifted_table_is_a_couple_of_runs() {
        let seqs: Vec<i64> = (0..40).chain(100..124).chain([7, 3]).collect();
        let blob = encode_refs(seqs.iter().copied());
        // Four runs: 0..40, 100..124, 7, 3; two bytes each but one (a jump back of 117).
        assert_eq!(blob.len(), 9);
        assert_eq!(decode_refs(&blob).unwrap(), seqs);
        assert!(encode_refs([]).is_empty());
    }

    /// [`encode_refs`] as first written: runs found by indexing ahead.
    fn reference_refs(seqs: &[i64]) -> Vec<u8> {
        let mut out = Vec::new();
        let (mut prev_end, mut i) = (0_i64, 0);
        while i < seqs.len() {
            let start = seqs[i];
            let mut len: i64 = 1;
            while i + (len as usize) < seqs.len() && seqs[i + len as usize] == start + len {
                len += 1;
            }
            let delta = start.wrapping_sub(prev_end);
            put_varint(&mut out, ((delta << 1) ^ (delta >> 63)).cast_unsigned());
            put_varint(&mut out, (len - 1).cast_unsigned());
            prev_end = start + len;
            i += len as usize;
        }
        out
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
            plan.lines(&texts),
            vec!["S\n", "T\n", "a\n", "b\n", "x1\n", "x2"]
        );
        assert_eq!(plan.texts[3], vec![2, 3, 5]);
        assert!(LinePlan::new(&[""], 2).texts[0].is_empty());
    }

    #[test]
    fn blocks_round_trip_and_refuse_damage() {
        let lines = ["a\n", "", "é ✓ 🙂\n", "no newline"];
        let body = encode_block(lines.iter().copied()).unwrap();
        assert_eq!(decode_block(&body, 4).unwrap(), lines);
        assert!(decode_block(&body, 3).is_err(), "bytes after the last line");
        assert!(decode_block(&body, 5).is_err(), "a length cut short");
        assert!(decode_block(b"not zstd", 1).is_err());
        assert!(decode_block(&body[..body.len() - 1], 4).is_err());
    }

    #[test]
    fn a_line_is_found_in_the_block_that_holds_it() {
        let blocks = [(0, 3), (3, 1), (10, 5)];
        assert_eq!(
            blocks_holding(&blocks, &[0, 2, 3, 12], "x").unwrap(),
            vec![(0, 3), (3, 1), (10, 5)]
        );
        assert_eq!(
            blocks_holding(&blocks, &[11, 14], "x").unwrap(),
            vec![(10, 5)]
        );
        // 4..10 are in no block, 15 is past the last.
        assert!(blocks_holding(&blocks, &[5], "x").is_err());
        assert!(blocks_holding(&blocks, &[15], "x").is_err());
        assert!(blocks_holding(&[], &[0], "x").is_err());
    }

    #[test]
    fn the_cache_knows_committed_lines_below_the_next_number() {
        let cache = LineCache::default();
        assert_eq!(cache.lookup(1, 10, &["a"]), vec![None]);
        let mut update = CacheUpdate::default();
        update.add(1, &["a", "b"], &[0, 1]);
        cache.remember(update);
        assert_eq!(
            cache.lookup(1, 2, &["b", "a", "c"]),
            vec![Some(1), Some(0), None]
        );
        // Another scope, and a next number the cache is ahead of (never trusted).
        assert_eq!(cache.lookup(2, 2, &["a"]), vec![None]);
        assert_eq!(cache.lookup(1, 1, &["b"]), vec![None]);
        // Past SCOPE_LINES only the last write's lines stay.
        let many: Vec<String> = (0..=SCOPE_LINES).map(|i| format!("l{i}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let seqs: Vec<i64> = (2..).take(refs.len()).collect();
        let mut update = CacheUpdate::default();
        update.add(1, &refs, &seqs);
        cache.remember(update);
        assert_eq!(cache.lookup(1, i64::MAX, &["a", "l0"]), vec![None, Some(2)]);
        // Over the budget, the least recently written scope goes first, never the one just
        // written.
        let small = LineCache::default();
        small.inner().budget = 3 * entry_bytes("x");
        for scope in 1..=4 {
            let mut update = CacheUpdate::default();
            update.add(scope, &["x"], &[0]);
            small.remember(update);
        }
        assert_eq!(small.lookup(1, 1, &["x"]), vec![None]);
        assert_eq!(small.lookup(4, 1, &["x"]), vec![Some(0)]);
        assert_eq!(small.inner().scopes.len(), 3);
        assert_eq!(small.inner().bytes, 3 * entry_bytes("x"));
        let long = "a line longer than the whole budget ".repeat(8);
        let mut update = CacheUpdate::default();
        update.add(9, &[long.as_str()], &[0]);
        small.remember(update);
        assert_eq!(small.inner().scopes.len(), 1, "all older scopes forgotten");
        assert_eq!(small.lookup(9, 1, &[long.as_str()]), vec![Some(0)]);
    }

    proptest! {
        #[test]
        fn lists_round_trip(seqs in proptest::collection::vec(0i64..1_000_000, 0..200)) {
            let blob = encode_refs(seqs.iter().copied());
            prop_assert_eq!(&blob, &reference_refs(&seqs));
            prop_assert_eq!(decode_refs(&blob).unwrap(), seqs);
        }

        /// Finding lines at their place in the tick before (by comparing bytes) gives the plan
        /// hashing every line gives: the same distinct lines in the same order, the same lists.
        #[test]
        fn the_hinted_plan_is_the_hashed_plan(
            ticks in proptest::collection::vec(
                (
                    0_usize..3,
                    proptest::option::of((0_usize..12, "[a-d]{0,3}\n?")),
                    proptest::collection::vec("[a-d]{0,2}\n?", 0..12),
                ),
                0..8,
            ),
            streams in 1_usize..3,
        ) {
            // Each text is the one before it slid by 0..3 lines, maybe with one of those lines
            // replaced, with new lines appended.
            let mut texts: Vec<String> = Vec::new();
            for (t, (slide, edit, new)) in ticks.iter().enumerate() {
                let mut kept: Vec<&str> = t
                    .checked_sub(streams)
                    .map(|b| lines(&texts[b]).skip(*slide).collect())
                    .unwrap_or_default();
                if let Some((i, line)) = edit
                    && let Some(old) = kept.get_mut(*i)
                {
                    *old = line;
                }
                let mut text: String = kept.concat();
                text.extend(new.iter().map(String::as_str));
                texts.push(text);
            }
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            let plan = LinePlan::new(&texts, streams);
            let (distinct, lists) = hashed_plan(&texts, streams);
            let lines = plan.lines(&texts);
            prop_assert_eq!(&lines, &distinct);
            prop_assert_eq!(&plan.texts, &lists);
            for (text, list) in texts.iter().zip(&plan.texts) {
                let joined: String = list.iter().map(|&i| lines[i as usize]).collect();
                prop_assert_eq!(&joined, text);
            }
        }

        #[test]
        fn the_common_prefix_is_the_bytes_compared_one_by_one(
            shared in proptest::collection::vec(any::<u8>(), 0..1200),
            a_tail in proptest::collection::vec(0_u8..3, 0..40),
            b_tail in proptest::collection::vec(0_u8..3, 0..40),
        ) {
            let a: Vec<u8> = shared.iter().chain(&a_tail).copied().collect();
            let b: Vec<u8> = shared.iter().chain(&b_tail).copied().collect();
            let one_by_one = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            prop_assert_eq!(common_prefix(&a, &b), one_by_one);
            prop_assert_eq!(common_prefix(&b, &a), one_by_one);
        }

        #[test]
        fn lines_join_back_to_the_text(text in "[a-cé\n]{0,40}") {
            prop_assert_eq!(lines(&text).collect::<String>(), text.clone());
            prop_assert_eq!(
                lines(&text).collect::<Vec<_>>(),
                text.split_inclusive('\n').collect::<Vec<_>>()
            );
        }
    }
}
