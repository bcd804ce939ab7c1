//! The primitives every style is built on: decimal text as `Display` prints it, without the
//! formatting machinery, and 64-bit rounding (the prompt writers print thousands of decimals a
//! tick).

use rust_decimal::Decimal;

/// Appends the digits of `mantissa` with the point before the last `scale` of them, at least
/// one digit before the point (`0.05`, `0`), and, when `grouped`, `,` every three integer digits
/// (`1,234.5`). No sign. Written from `itoa`'s text: no division per digit, no UTF-8 check.
pub(super) fn push_parts<T: itoa::Integer>(
    out: &mut String,
    mantissa: T,
    scale: usize,
    grouped: bool,
) {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(mantissa);
    // Only ASCII digits: every cut below is a character boundary.
    let (int, frac) = match digits.len().checked_sub(scale).filter(|n| *n > 0) {
        Some(int_len) => (digits.get(..int_len), digits.get(int_len..)),
        None => (Some("0"), None),
    };
    let int = int.unwrap_or_default();
    if grouped {
        let head = match int.len() % 3 {
            0 => 3.min(int.len()),
            n => n,
        };
        out.push_str(int.get(..head).unwrap_or_default());
        let mut at = head;
        while let Some(group) = int.get(at..at + 3) {
            out.push(',');
            out.push_str(group);
            at += 3;
        }
    } else {
        out.push_str(int);
    }
    if scale > 0 {
        out.push('.');
        match frac {
            Some(frac) => out.push_str(frac),
            None => {
                // The zeros the digits do not reach, then the digits.
                for _ in digits.len()..scale {
                    out.push('0');
                }
                out.push_str(digits);
            }
        }
    }
}

/// `|d|` rounded half away from zero to exactly `dp` decimals, as the mantissa of a decimal of
/// scale `dp` (`1.005` at 2 → `101`), when the result fits 64 bits (prices and money, always).
/// A 96-bit mantissa (an amount that went through a division carries 28 decimals) is rounded in
/// 128-bit integers. `None` when the result does not fit: round through `Decimal` then. The sign
/// is the caller's (a value that rounds to zero has none).
#[must_use]
pub fn rounded_mantissa(d: Decimal, dp: u32) -> Option<u64> {
    let parts = d.unpack();
    if dp > 28 {
        return None;
    }
    let m = (u64::from(parts.mid) << 32) | u64::from(parts.lo);
    let (value, scale) = if parts.scale <= dp {
        (if parts.hi == 0 { Some(m) } else { None }, parts.scale)
    } else if parts.hi == 0 {
        // Drop `scale − dp` digits, adding one when they are at least half (10^20 and up
        // exceed any 64-bit mantissa: less than half, zero).
        let q = match 10_u64.checked_pow(parts.scale - dp) {
            Some(p) => half_up(m, p),
            None => 0,
        };
        (Some(q), dp)
    } else {
        // The same in 128 bits (10^28 fits).
        let wide = (u128::from(parts.hi) << 64) | u128::from(m);
        let q = half_up(wide, 10_u128.pow(parts.scale - dp));
        (u64::try_from(q).ok(), dp)
    };
    10_u64
        .checked_pow(dp - scale)
        .and_then(|p| value?.checked_mul(p))
}

/// `m / p` rounded half up (`p` > 0).
fn half_up<T>(m: T, p: T) -> T
where
    T: Copy + PartialOrd + From<u8> + std::ops::Div<Output = T> + std::ops::Rem<Output = T>,
    T: std::ops::Sub<Output = T> + std::ops::Add<Output = T>,
{
    let (q, r) = (m / p, m % p);
    if r >= p - r { q + T::from(1) } else { q }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    #[test]
    fn rounded_mantissa_rounds_half_away_from_zero_then_rescales() {
        for (text, dp, expected) in [
            ("1.005", 2, Some(101)),   // 1005 / 10 = 100 r 5: half, away → 101
            ("1.004", 2, Some(100)),   // r 4 < 5
            ("-1.005", 2, Some(101)),  // the sign is the caller's
            ("0.004", 2, Some(0)),     // rounds to zero
            ("12.5", 3, Some(12_500)), // rescaled up: 125 × 10^2
            ("3", 0, Some(3)),
            ("18446744073709551615", 1, None), // × 10 leaves 64 bits
            ("79228162514264337593543950335", 0, None), // the result needs 96 bits
            // A 96-bit mantissa, rounded in 128 bits: ...67.49|5 → 67.50 at 2, 67.495 at 3.
            ("10067.495000000000000000000001", 2, Some(1_006_750)),
            ("10067.495000000000000000000001", 3, Some(10_067_495)),
            ("-0.0049999999999999999999999999", 2, Some(0)),
        ] {
            let d = Decimal::from_str(text).unwrap();
            assert_eq!(rounded_mantissa(d, dp), expected, "{text} at {dp}");
        }
    }

    #[test]
    fn prints_as_display_does() {
        let text = |d: Decimal| {
            let mut out = String::new();
            crate::text::push_decimal(&mut out, d);
            out
        };
        for s in [
            "0",
            "0.05",
            "-0.05",
            "1234.5000",
            "-1",
            "79228162514264337593543950335",
            "-7.9228162514264337593543950335",
            "0.0000000000000000000000000001",
        ] {
            let d = Decimal::from_str(s).unwrap();
            assert_eq!(text(d), d.to_string(), "{s}");
        }
        // A negative zero keeps its sign, as Display prints it.
        let neg_zero = Decimal::from_str("-0.00").unwrap();
        assert_eq!(text(neg_zero), neg_zero.to_string());
    }
}
