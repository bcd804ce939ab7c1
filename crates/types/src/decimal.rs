//! Reading decimals from text fast, exactly as `rust_decimal` reads them; and a decimal's
//! mantissa at a larger scale, for exact integer arithmetic on prices.

use std::str::FromStr as _;

use rust_decimal::Decimal;

/// `text` as [`Decimal::from_str`] reads it (`None` where it fails). Plain decimals — digits
/// with at most one point inside them, at most 18 characters, the prices and volumes of a bar
/// table or a bar file — are read digit by digit into the same mantissa and scale (≈70
/// instructions instead of ≈300); anything else goes to `from_str`.
#[must_use]
pub fn parse_plain_decimal(text: &str) -> Option<Decimal> {
    let bytes = text.as_bytes();
    // At most 18 digits: the mantissa fits an i64 and the scale is at most 16.
    if bytes.is_empty() || bytes.len() > 18 {
        return Decimal::from_str(text).ok();
    }
    let mut mantissa: i64 = 0;
    let mut point = None;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'0'..=b'9' => mantissa = mantissa * 10 + i64::from(b - b'0'),
            b'.' if point.is_none() && i > 0 && i + 1 < bytes.len() => point = Some(i),
            _ => return Decimal::from_str(text).ok(),
        }
    }
    let scale = point.map_or(0, |p| bytes.len() - p - 1);
    Some(Decimal::new(mantissa, u32::try_from(scale).ok()?))
}

/// `d`'s mantissa at `scale` (at least `d`'s own: `d × 10^scale`, an integer), when its size is
/// below `limit`; `None` otherwise (a smaller scale, more than 18 places more, or too large). Sums of such mantissas at one
/// scale are the exact values `Decimal`'s additions give while they stay inside 96 bits: the
/// integer paths of the regime and the sma-cross baseline rest on it.
#[must_use]
pub fn mantissa_at(d: Decimal, scale: u32, limit: i64) -> Option<i64> {
    const POW10: [i64; 19] = {
        let mut t = [1_i64; 19];
        let mut i = 1;
        while i < t.len() {
            t[i] = t[i - 1] * 10;
            i += 1;
        }
        t
    };
    let up = scale.checked_sub(d.scale())?;
    let m = i64::try_from(d.mantissa())
        .ok()?
        .checked_mul(*POW10.get(up as usize)?)?;
    (m.abs() < limit).then_some(m)
}

#[cfg(test)]
mod tests {
    use std::str::FromStr as _;

    use proptest::prelude::*;
    use rust_decimal::Decimal;

    use super::{mantissa_at, parse_plain_decimal};

    /// The value and its representation: `1.50` and `1.5` are equal decimals, but not the
    /// same text once printed.
    fn exact(d: Option<Decimal>) -> Option<(i128, u32, bool)> {
        d.map(|d| (d.mantissa(), d.scale(), d.is_sign_negative()))
    }

    #[test]
    fn reads_prices_as_from_str_does() {
        for text in [
            "1.17734",
            "1.17300",
            "0.00001",
            "118",
            "0",
            "0.0",
            "123456789012345678",
            "1234567890123456789",
            "12345678901234567.8",
            "1.",
            ".5",
            "1..2",
            "-1.5",
            "1e5",
            "",
            " 1",
            "1,5",
        ] {
            assert_eq!(
                exact(parse_plain_decimal(text)),
                exact(Decimal::from_str(text).ok()),
                "{text:?}"
            );
        }
    }

    proptest! {
        #[test]
        fn agrees_with_from_str(text in "[0-9.]{0,22}|-?[0-9]{1,20}\\.[0-9]{0,12}") {
            prop_assert_eq!(exact(parse_plain_decimal(&text)), exact(Decimal::from_str(&text).ok()));
        }
    }

    proptest! {
        /// The mantissa at a scale is the same value, or `None` when it cannot be (a smaller
        /// scale, past the limit).
        #[test]
        fn a_mantissa_at_a_scale_is_the_same_value(
            m in any::<i64>(),
            own in 0_u32..=28,
            scale in 0_u32..=28,
            limit in prop_oneof![Just(i64::MAX), Just(1_i64 << 57), 1_i64..1_000_000],
        ) {
            let d = Decimal::new(m, own);
            match mantissa_at(d, scale, limit) {
                Some(at) => {
                    prop_assert!(at.abs() < limit);
                    prop_assert_eq!(Decimal::new(at, scale), d);
                }
                None => prop_assert!(
                    scale < own
                        || scale - own > 18
                        || i128::from(m)
                            .checked_mul(10_i128.pow(scale - own))
                            .is_none_or(|big| big.abs() >= i128::from(limit))
                ),
            }
        }
    }
}
