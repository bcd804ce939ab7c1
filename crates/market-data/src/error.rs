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
