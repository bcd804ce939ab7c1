//! A market-event calendar from a file: a JSON array of events (the `sim-worker --events`
//! shape: `kind`, `title`, `symbols`, `scheduled_at`, `importance`, optional `id` and `source`)
//! or a CSV file with the header `kind,title,symbols,scheduled_at,importance[,source]`
//! (symbols separated by spaces or `;`, times RFC 3339).

use std::path::Path;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use types::{EventKind, MarketEvent};

use crate::DataError;

/// Reads a calendar file: CSV when the name ends in `.csv`, else JSON. Every event is checked
/// ([`MarketEvent::check`]); one without an `id` gets [`MarketEvent::derived_id`] (so a file read
/// twice gives the same ids), one without a `source` the file's name.
///
/// # Errors
/// [`DataError`] naming the file and the line of the first bad event (JSON: where the event
/// ends) or of every bad row (CSV, one per line of the message); nothing is returned then.
pub fn load_events(path: &Path) -> Result<Vec<MarketEvent>, DataError> {
    let text = std::fs::read_to_string(path).map_err(|e| DataError::io(path, e))?;
    let csv = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let mut events = if csv {
        parse_csv(path, &text)?
    } else {
        serde_json::from_str::<Vec<MarketEvent>>(&text)
            .map_err(|e| DataError::line(path, e.line() as u64, e.to_string()))?
    };
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    for e in &mut events {
        if e.source.is_empty() {
            e.source.clone_from(&name);
        }
    }
    Ok(events)
}

const COLUMNS: [&str; 6] = [
    "kind",
    "title",
    "symbols",
    "scheduled_at",
    "importance",
    "source",
];

fn parse_csv(path: &Path, text: &str) -> Result<Vec<MarketEvent>, DataError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .flexible(false)
        .from_reader(text.as_bytes());
    let header = reader
        .headers()
        .map_err(|e| DataError::line(path, 1, e.to_string()))?
        .clone();
    let names: Vec<&str> = header.iter().collect();
    if names.len() < 5 || names.len() > 6 || names[..] != COLUMNS[..names.len()] {
        return Err(DataError::line(
            path,
            1,
            format!(
                "expected the header {}[,source], got {}",
                COLUMNS[..5].join(","),
                names.join(",")
            ),
        ));
    }
    crate::error::csv_rows(path, &mut reader, event_of)
}

fn event_of(r: &csv::StringRecord) -> Result<MarketEvent, String> {
    let field = |i: usize| r.get(i).unwrap_or("");
    let kind = EventKind::parse(field(0)).ok_or_else(|| {
        let known: Vec<&str> = EventKind::ALL.iter().map(|k| k.as_str()).collect();
        format!(
            "unknown kind {:?} (expected one of {})",
            field(0),
            known.join(", ")
        )
    })?;
    let title = field(1).to_owned();
    let symbols = field(2)
        .split([' ', ';'])
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let scheduled_at = DateTime::parse_from_rfc3339(field(3))
        .map_err(|e| format!("scheduled_at {:?}: {e} (expected RFC 3339)", field(3)))?
        .with_timezone(&Utc);
    let importance =
        Decimal::from_str(field(4)).map_err(|e| format!("importance {:?}: {e}", field(4)))?;
    let event = MarketEvent {
        id: MarketEvent::derived_id(kind, scheduled_at, &title),
        kind,
        title,
        symbols,
        scheduled_at,
        importance,
        source: field(5).to_owned(),
    };
    event.check().map_err(|e| e.to_string())?;
    Ok(event)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn file(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::File::create(&path)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        (dir, path)
    }

    #[test]
    fn csv_and_json_give_the_same_events() {
        let (_d1, csv) = file(
            "cal.csv",
            "kind,title,symbols,scheduled_at,importance\n\
             fomc,FOMC rate decision,EURUSD USD,2017-02-01T19:00:00Z,1.0\n\
             cpi,US CPI,BTC;ETH,2017-02-14T13:30:00Z,0.8\n",
        );
        let (_d2, json) = file(
            "cal.csv.json",
            r#"[{"kind": "fomc", "title": "FOMC rate decision", "symbols": ["EURUSD", "USD"],
                 "scheduled_at": "2017-02-01T19:00:00Z", "importance": 1.0},
                {"kind": "cpi", "title": "US CPI", "symbols": ["BTC", "ETH"],
                 "scheduled_at": "2017-02-14T13:30:00Z", "importance": 0.8, "source": "cal.csv"}]"#,
        );
        let a = load_events(&csv).unwrap();
        let mut b = load_events(&json).unwrap();
        for e in &mut b {
            e.source = "cal.csv".into();
        }
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].symbols, ["EURUSD", "USD"]);
        assert_eq!(a[1].symbols, ["BTC", "ETH"]);
        assert_eq!(a[0].source, "cal.csv", "no source column: the file's name");
        assert_eq!(a, b);
    }

    #[test]
    fn bad_csv_rows_are_named_by_line() {
        let (_d, csv) = file(
            "cal.csv",
            "kind,title,symbols,scheduled_at,importance,source\n\
             fomc,FOMC,,2017-02-01T19:00:00Z,1.0,fed\n\
             lunch,Lunch,,2017-02-01T12:00:00Z,0.5,me\n\
             cpi,CPI,,2017-02-14T13:30:00Z,1.5,bls\n",
        );
        let err = load_events(&csv).unwrap_err().to_string();
        assert!(err.contains("cal.csv:3: unknown kind \"lunch\""), "{err}");
        assert!(
            err.contains("cal.csv:4: importance 1.5 is outside 0..=1"),
            "{err}"
        );
        assert!(!err.contains(":2:"), "{err}");
    }

    #[test]
    fn a_bad_json_event_is_named_by_line() {
        let (_d, json) = file(
            "cal.json",
            "[\n{\"kind\": \"fomc\", \"title\": \"FOMC\", \"symbols\": [],\n \
             \"scheduled_at\": \"2017-02-01T19:00:00Z\", \"importance\": 2}\n]",
        );
        let err = load_events(&json).unwrap_err().to_string();
        // serde_json places a value's error where the value ends.
        assert!(
            err.contains("cal.json:4: importance 2 is outside 0..=1"),
            "{err}"
        );
    }

    #[test]
    fn the_shared_central_bank_calendar_loads() {
        let path = Path::new("/work/shared/data/events/central-bank-decisions-2017-2018.json");
        if path.exists() {
            let events = load_events(path).unwrap();
            assert_eq!(events.len(), 32);
        }
    }
}
