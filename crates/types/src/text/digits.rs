//! The primitives every style is built on: decimal text as `Display` prints it, without the
//! formatting machinery, and 64-bit rounding (the prompt writers print thousands of decimals a
//! tick).

use rust_decimal::Decimal;

/// The text of a decimal given by its parts, written into the end of `buf`: `-` when
/// `negative`, the digits of `mantissa` with the point before the last `scale` of them, at
/// least one digit before the point (`0.05`, `0`). `scale` is at most 28, so 29 digits, a
/// leading `0`, the point and the sign fit in 32 bytes.
pub fn decimal_parts_text<T>(
    buf: &mut [u8; 32],
    mut mantissa: T,
    scale: usize,
    negative: bool,
) -> &str
where
    T: Copy + PartialEq + From<u8> + std::ops::Rem<Output = T> + std::ops::Div<Output = T>,
    u8: TryFrom<T>,
{
    let (zero, ten) = (T::from(0), T::from(10));
    let mut at = buf.len();
    let mut written = 0;
    // Right to left; `0.05` has `scale + 1` digits at least, `0` one.
    while mantissa != zero || written <= scale {
        if written == scale && scale > 0 {
            at -= 1;
            buf[at] = b'.';
        }
        at -= 1;
        buf[at] = b'0' + u8::try_from(mantissa % ten).unwrap_or(0);
        mantissa = mantissa / ten;
        written += 1;
    }
    if negative {
        at -= 1;
        buf[at] = b'-';
    }
    // Only ASCII digits, `.` and `-` were written.
    std::str::from_utf8(&buf[at..]).unwrap_or_default()
}

/// `d.to_string()` written into `buf` (`-0.00` for a negative zero); `None` for a scale above
/// 28, which only `rescale` makes (print those with `Display`).
pub fn decimal_text(buf: &mut [u8; 32], d: Decimal) -> Option<&str> {
    let scale = d.scale() as usize;
    if scale > 28 {
        return None;
    }
    let mantissa = d.mantissa().unsigned_abs();
    Some(match u64::try_from(mantissa) {
        Ok(m) => decimal_parts_text(buf, m, scale, d.is_sign_negative()),
        Err(_) => decimal_parts_text(buf, mantissa, scale, d.is_sign_negative()),
    })
}

/// `|d|` rounded half away from zero to exactly `dp` decimals, as the mantissa of a decimal of
/// scale `dp` (`1.005` at 2 → `101`), when 64-bit integer arithmetic suffices: `d`'s mantissa
/// and the result fit 64 bits (prices and money, always). `None` otherwise: round through
/// `Decimal` then. The sign is the caller's (a value that rounds to zero has none).
#[must_use]
pub fn rounded_mantissa(d: Decimal, dp: u32) -> Option<u64> {
    let parts = d.unpack();
    if parts.hi != 0 || dp > 28 {
        return None;
    }
    let m = (u64::from(parts.mid) << 32) | u64::from(parts.lo);
    let (value, scale) = if parts.scale <= dp {
        (m, parts.scale)
    } else {
        // Drop `scale − dp` digits, adding one when they are at least half (10^20 and up
        // exceed any 64-bit mantissa: less than half, zero).
        let q = match 10_u64.checked_pow(parts.scale - dp) {
            Some(p) => {
                let (q, r) = (m / p, m % p);
                if r >= p - r { q + 1 } else { q }
            }
            None => 0,
        };
        (q, dp)
    };
    10_u64
        .checked_pow(dp - scale)
        .and_then(|p| value.checked_mul(p))
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
            ("79228162514264337593543950335", 0, None), // the mantissa needs 96 bits
        ] {
            let d = Decimal::from_str(text).unwrap();
            assert_eq!(rounded_mantissa(d, dp), expected, "{text} at {dp}");
        }
    }

    #[test]
    fn prints_as_display_does() {
        let mut buf = [0_u8; 32];
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
            assert_eq!(
                decimal_text(&mut buf, d),
                Some(d.to_string().as_str()),
                "{s}"
            );
        }
        // A negative zero keeps its sign, as Display prints it.
        let neg_zero = Decimal::from_str("-0.00").unwrap();
        assert_eq!(
            decimal_text(&mut buf, neg_zero),
            Some(neg_zero.to_string().as_str())
        );
    }
}
