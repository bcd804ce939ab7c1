//! Token usage of a model call, normalised across providers.

use serde::{Deserialize, Serialize};

/// Token usage, normalised across providers. `input` counts only uncached input tokens;
/// cached reads and cache writes are counted separately because they are priced separately.
///
/// The one usage type: the model interface reports it, the tick sums it, the store keeps it on
/// every decision snapshot. Sums saturate at `u64::MAX`: a count never wraps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Usage {
    /// Uncached input tokens.
    pub input: u64,
    /// Output (generated) tokens.
    pub output: u64,
    /// Input tokens read from the provider's prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the provider's prompt cache.
    pub cache_write: u64,
}

/// The largest token count one model call may report (2^40, about 1.1 trillion: far beyond any
/// context window). A provider response above it is malformed, refused where it is decoded;
/// sums of plausible counts stay far below the stores' signed 64-bit columns.
pub const MAX_CALL_TOKENS: u64 = 1 << 40;

impl Usage {
    /// The first count above [`MAX_CALL_TOKENS`] as `(field, value)`, if any: a usage one model
    /// call cannot have reported honestly.
    #[must_use]
    pub fn implausible(&self) -> Option<(&'static str, u64)> {
        [
            ("input", self.input),
            ("output", self.output),
            ("cache_read", self.cache_read),
            ("cache_write", self.cache_write),
        ]
        .into_iter()
        .find(|&(_, n)| n > MAX_CALL_TOKENS)
    }

    /// Every input token: uncached input, cache reads and cache writes (saturating).
    #[must_use]
    pub const fn total_input(&self) -> u64 {
        self.input
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Self) {
        self.input = self.input.saturating_add(rhs.input);
        self.output = self.output.saturating_add(rhs.output);
        self.cache_read = self.cache_read.saturating_add(rhs.cache_read);
        self.cache_write = self.cache_write.saturating_add(rhs.cache_write);
    }
}

impl std::ops::Add for Usage {
    type Output = Self;

    fn add(mut self, rhs: Self) -> Self {
        self += rhs;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_saturate_instead_of_wrapping() {
        let mut u = Usage {
            input: u64::MAX - 1,
            output: 1,
            cache_read: 2,
            cache_write: 3,
        };
        u += Usage {
            input: 5,
            output: 1,
            cache_read: u64::MAX,
            cache_write: 0,
        };
        assert_eq!(
            u,
            Usage {
                input: u64::MAX,
                output: 2,
                cache_read: u64::MAX,
                cache_write: 3,
            }
        );
        assert_eq!(u.total_input(), u64::MAX);
    }
}
