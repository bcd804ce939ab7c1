//! Eight bytes at a time in a `u64` (SIMD within a register), for the byte scans of prompt text.

/// `word` with the high bit of each of its eight byte lanes set exactly where that byte is
/// zero, and every other bit clear. Exact: no carry crosses a lane (the low seven bits are
/// added apart from the high one). XOR a word with a byte repeated (`u64::from_ne_bytes([b;
/// 8])`) to find that byte.
#[must_use]
pub const fn zero_bytes(word: u64) -> u64 {
    const LOW7: u64 = u64::from_ne_bytes([0x7f; 8]);
    !(((word & LOW7) + LOW7) | word | LOW7)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Byte by byte: `0x80` in each zero lane, `0` in every other.
        #[test]
        fn marks_exactly_the_zero_bytes(bytes in prop::array::uniform8(prop_oneof![Just(0_u8), Just(0x80), Just(1), any::<u8>()])) {
            let expected = u64::from_ne_bytes(bytes.map(|b| if b == 0 { 0x80 } else { 0 }));
            prop_assert_eq!(zero_bytes(u64::from_ne_bytes(bytes)), expected);
        }
    }
}
