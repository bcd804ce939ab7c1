use std::path::PathBuf;

/// A data file that could not be used, with the place that is wrong.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Line {
        path: PathBuf,
        line: u64,
        message: String,
    },
    #[error("{path}: {message}")]
    File { path: PathBuf, message: String },
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
