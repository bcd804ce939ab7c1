use std::path::PathBuf;

/// A data file that could not be used, with the place that is wrong.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The file could not be read (missing, permissions, not UTF-8 for text formats).
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// One line of the file is wrong (bad header, bad value, bars out of order).
    #[error("{path}:{line}: {message}")]
    Line {
        /// The file.
        path: PathBuf,
        /// The 1-based line number.
        line: u64,
        /// What is wrong on that line.
        message: String,
    },
    /// The file as a whole is wrong (not the expected JSON shape, duplicate fill ids, a list
    /// of bad rows).
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong, with line numbers where known.
        message: String,
    },
}

impl DataError {
    pub(crate) fn line(path: &std::path::Path, line: u64, message: impl Into<String>) -> Self {
        Self::Line {
            path: path.to_owned(),
            line,
            message: message.into(),
        }
    }

    pub(crate) fn file(path: &std::path::Path, message: impl Into<String>) -> Self {
        Self::File {
            path: path.to_owned(),
            message: message.into(),
        }
    }

    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_owned(),
            source,
        }
    }
}

/// Every data row of a CSV file read by `row`, or every bad row named by file and line (all of
/// them, not only the first): the one row loop of the CSV readers.
pub(crate) fn csv_rows<R: std::io::Read, T>(
    path: &std::path::Path,
    reader: &mut csv::Reader<R>,
    row: impl Fn(&csv::StringRecord) -> Result<T, String>,
) -> Result<Vec<T>, DataError> {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for record in reader.records() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map_or(0, csv::Position::line);
                problems.push(format!("{}:{line}: {e}", path.display()));
                continue;
            }
        };
        let line = record.position().map_or(0, csv::Position::line);
        match row(&record) {
            Ok(v) => out.push(v),
            Err(message) => problems.push(format!("{}:{line}: {message}", path.display())),
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(DataError::file(
            path,
            format!("bad rows:\n{}", problems.join("\n")),
        ))
    }
}
