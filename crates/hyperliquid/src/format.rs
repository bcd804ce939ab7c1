//! Prices and sizes on the wire.
//!
//! Hyperliquid takes prices and sizes as decimal strings and rejects values that break its tick and
//! lot rules (perps): a size has at most `szDecimals` decimals; a price has at most 5 significant
//! figures and at most `6 − szDecimals` decimals, except that an integer price is always accepted.
//! The strings are written the way the official SDKs' `float_to_wire` writes them: no exponent,
//! trailing zeros stripped (`"100"`, `"0.0147"`), at most 8 decimals, never `"-0"`.

use rust_decimal::{Decimal, RoundingStrategy};
use types::OrderSide;

use crate::error::{HlError, Result};

/// Decimals a perp price may have at most, before subtracting the asset's `szDecimals`.
pub const PERP_MAX_PRICE_DECIMALS: u32 = 6;
/// Significant figures a (non-integer) price may have at most.
pub const PRICE_SIG_FIGS: u32 = 5;
/// Decimals the wire format carries at most (the SDKs' `float_to_wire` rounds to 8 and refuses
/// values that rounding would change).
pub const WIRE_MAX_DECIMALS: u32 = 8;

/// Writes `value` the way the official SDKs do: no exponent, no trailing zeros, `"0"` for zero.
///
/// # Errors
/// [`HlError::WireNumber`] when `value` has more than 8 decimals (the SDKs refuse those too,
/// rather than silently rounding what gets signed).
pub fn to_wire(field: &'static str, value: Decimal) -> Result<String> {
    if value.round_dp(WIRE_MAX_DECIMALS) != value {
        return Err(HlError::WireNumber {
            field,
            value,
            reason: "more than 8 decimals",
        });
    }
    let n = value.normalize();
    if n.is_zero() {
        return Ok("0".to_owned());
    }
    Ok(n.to_string())
}

/// Rounds a size to the asset's lot: `sz_decimals` decimals, **toward zero**.
///
/// The SDK examples round to nearest; rounding toward zero instead guarantees the order is never
/// larger than what the execution engine approved.
#[must_use]
pub fn round_size(size: Decimal, sz_decimals: u32) -> Decimal {
    size.round_dp_with_strategy(sz_decimals, RoundingStrategy::ToZero)
        .normalize()
}

/// Rounds a perp price to what the exchange accepts: 5 significant figures and at most
/// `6 − sz_decimals` decimals; prices of 10 000 and above are rounded to an integer (integers are
/// always valid). Midpoints round to even, like the SDKs' `round`.
///
/// # Errors
/// [`HlError::WireNumber`] for a price that is not positive or that rounds to zero.
pub fn round_perp_price(price: Decimal, sz_decimals: u32) -> Result<Decimal> {
    if price <= Decimal::ZERO {
        return Err(HlError::WireNumber {
            field: "price",
            value: price,
            reason: "must be positive",
        });
    }
    let max_decimals = PERP_MAX_PRICE_DECIMALS.saturating_sub(sz_decimals);
    // Decimals needed for 5 significant figures: 5 − (number of integer digits), or more for
    // prices below 1 (one per leading zero after the point).
    let magnitude = decimal_exponent(price); // floor(log10(price))
    let sig_decimals = i64::from(PRICE_SIG_FIGS) - 1 - magnitude;
    let decimals = u32::try_from(sig_decimals.max(0))
        .unwrap_or(u32::MAX)
        .min(max_decimals);
    let rounded = price
        .round_dp_with_strategy(decimals, RoundingStrategy::MidpointNearestEven)
        .normalize();
    if rounded.is_zero() {
        return Err(HlError::WireNumber {
            field: "price",
            value: price,
            reason: "rounds to zero at this asset's tick size",
        });
    }
    Ok(rounded)
}

/// A limit price that crosses the book by `slippage` (a fraction, e.g. `0.05` for 5 %) from
/// `reference` (usually the mid or mark), rounded with [`round_perp_price`]: the official SDKs'
/// way of sending a "market" order as an IOC limit.
///
/// # Errors
/// [`HlError::WireNumber`] when the slippage is negative or at least 1, or the price is unusable.
pub fn slippage_price(
    reference: Decimal,
    side: OrderSide,
    slippage: Decimal,
    sz_decimals: u32,
) -> Result<Decimal> {
    if slippage < Decimal::ZERO || slippage >= Decimal::ONE {
        return Err(HlError::WireNumber {
            field: "slippage",
            value: slippage,
            reason: "must be in [0, 1)",
        });
    }
    let factor = match side {
        OrderSide::Buy => Decimal::ONE + slippage,
        OrderSide::Sell => Decimal::ONE - slippage,
    };
    round_perp_price(reference * factor, sz_decimals)
}

/// `floor(log10(x))` for a positive decimal, exactly (no floats).
fn decimal_exponent(x: Decimal) -> i64 {
    // x = mantissa × 10^(−scale); the mantissa has `digits` digits, so
    // floor(log10(x)) = digits − 1 − scale.
    let mantissa = x.mantissa().unsigned_abs();
    let digits = i64::from(mantissa.checked_ilog10().unwrap_or(0)) + 1;
    digits - 1 - i64::from(x.scale())
}

#[cfg(test)]
mod tests {
    use rust_decimal_macros::dec;

    use super::*;

    #[test]
    fn exponent_is_floor_log10() {
        for (x, e) in [
            (dec!(1), 0),
            (dec!(9.99), 0),
            (dec!(10), 1),
            (dec!(26951.5), 4),
            (dec!(100000), 5),
            (dec!(0.5), -1),
            (dec!(0.001604), -3),
            (dec!(1.000), 0),
        ] {
            assert_eq!(decimal_exponent(x), e, "{x}");
        }
    }

    #[test]
    fn wire_strings_match_float_to_wire() {
        for (x, s) in [
            (dec!(100), "100"),
            (dec!(100.000), "100"),
            (dec!(0.0147), "0.0147"),
            (dec!(26951.50), "26951.5"),
            (dec!(0.00000001), "0.00000001"),
            (dec!(0), "0"),
            (dec!(-0.0), "0"),
            (dec!(1e3), "1000"),
        ] {
            assert_eq!(to_wire("x", x).unwrap(), s, "{x}");
        }
        assert!(to_wire("x", dec!(0.000000001)).is_err());
    }

    #[test]
    fn sizes_round_toward_zero_to_lot() {
        for (size, szd, want) in [
            (dec!(0.012345678), 5, dec!(0.01234)), // BTC: 5 decimals, 0.012345678 → 0.01234
            (dec!(1.99), 0, dec!(1)),              // DOGE: whole units, never up to 2
            (dec!(7.396), 2, dec!(7.39)),          // SOL: 2 decimals
            (dec!(0.00001), 4, dec!(0)),           // below one lot → 0 (caller refuses it)
            (dec!(246.5), 1, dec!(246.5)),         // already on the lot
        ] {
            assert_eq!(round_size(size, szd), want, "{size} @ {szd}");
        }
    }

    #[test]
    fn perp_prices_five_sig_figs_and_max_decimals() {
        for (px, szd, want) in [
            // 5 sig figs: 1234.5678 → 1234.6 (1 decimal); max decimals 6−5=1 does not bind.
            (dec!(1234.5678), 5, dec!(1234.6)),
            // ≥ 10 000: integer. 26951.5 → midpoint, to even → 26952.
            (dec!(26951.5), 5, dec!(26952)),
            (dec!(26950.5), 5, dec!(26950)),
            // ≥ 100 000: still an integer (integers are always valid), not 123460.
            (dec!(123456.7), 5, dec!(123457)),
            // 1.034834 → 5 sig figs = 1.0348 (4 decimals); MATIC szDecimals 1 → max 5, no bind.
            (dec!(1.034834), 1, dec!(1.0348)),
            // 0.001604371 → 5 sig figs = 0.0016044 (7 decimals) but max 6−0 = 6 → 0.001604.
            (dec!(0.001604371), 0, dec!(0.001604)),
            // ETH szDecimals 4 → max 2 decimals: 1705.8249 → 5 sig figs 1705.8 → 1705.8.
            (dec!(1705.8249), 4, dec!(1705.8)),
            // BTC szDecimals 5 → max 1 decimal; 9.87654 → 5 sig figs 9.8765 → 1 decimal 9.9.
            (dec!(9.87654), 5, dec!(9.9)),
            (dec!(100), 2, dec!(100)),
        ] {
            assert_eq!(round_perp_price(px, szd).unwrap(), want, "{px} @ {szd}");
        }
        assert!(round_perp_price(dec!(0), 2).is_err());
        assert!(round_perp_price(dec!(-1), 2).is_err());
        // 0.0000004 with 6 max decimals rounds to 0.
        assert!(round_perp_price(dec!(0.0000004), 0).is_err());
    }

    #[test]
    fn slippage_prices_cross_the_book() {
        // buy: 1705.82 × 1.05 = 1791.111 → 5 sig figs 1791.1 (ETH max 2 decimals).
        assert_eq!(
            slippage_price(dec!(1705.82), OrderSide::Buy, dec!(0.05), 4).unwrap(),
            dec!(1791.1)
        );
        // sell: 26951 × 0.95 = 25603.45 → integer 25603.
        assert_eq!(
            slippage_price(dec!(26951), OrderSide::Sell, dec!(0.05), 5).unwrap(),
            dec!(25603)
        );
        assert!(slippage_price(dec!(1), OrderSide::Buy, dec!(1), 0).is_err());
        assert!(slippage_price(dec!(1), OrderSide::Buy, dec!(-0.1), 0).is_err());
    }
}
