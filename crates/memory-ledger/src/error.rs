use rust_decimal::Decimal;
use uuid::Uuid;

/// Everything the materializer refuses. A refused batch changes nothing: every input is checked
/// before the first row moves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    /// A fill without a broker id cannot be deduplicated.
    #[error("fill #{index} on {symbol:?} has an empty id; every fill needs the broker's unique id")]
    EmptyFillId {
        /// The fill's 0-based position in the batch handed in.
        index: usize,
        /// The fill's symbol.
        symbol: String,
    },

    /// A fill with an empty symbol.
    #[error("fill {fill_id:?} has an empty symbol")]
    EmptyFillSymbol {
        /// The fill's broker id.
        fill_id: String,
    },

    /// Fill quantities are unsigned base units: the side says the direction.
    #[error("fill {fill_id:?} on {symbol}: quantity must be > 0, got {qty}")]
    NonPositiveFillQty {
        /// The fill's broker id.
        fill_id: String,
        /// The fill's symbol.
        symbol: String,
        /// The quantity given, in base units.
        qty: Decimal,
    },

    /// A fill at a price of zero or below.
    #[error("fill {fill_id:?} on {symbol}: price must be > 0, got {price}")]
    NonPositiveFillPrice {
        /// The fill's broker id.
        fill_id: String,
        /// The fill's symbol.
        symbol: String,
        /// The price given, in USD per base unit.
        price: Decimal,
    },

    /// The same broker id arrived twice in one batch with different content: the broker (or the
    /// caller) is confused and we will not guess which one is real.
    #[error("fill id {fill_id:?} appears twice in one batch with different content")]
    ConflictingDuplicateFill {
        /// The broker id that appeared twice.
        fill_id: String,
    },

    /// A broker position with a quantity of zero or below (positions are unsigned; flat
    /// symbols are simply absent).
    #[error("broker position on {symbol}: quantity must be > 0, got {qty}")]
    NonPositivePositionQty {
        /// The position's symbol.
        symbol: String,
        /// The quantity given, in base units.
        qty: Decimal,
    },

    /// A broker position with a non-positive entry or mark price.
    #[error("broker position on {symbol}: {field} must be > 0, got {value}")]
    NonPositivePositionPrice {
        /// The position's symbol.
        symbol: String,
        /// Which price is wrong: `entry_price` or `mark_price`.
        field: &'static str,
        /// The price given, in USD per base unit.
        value: Decimal,
    },

    /// Two broker positions on one symbol (one-way mode only).
    #[error("broker reported two positions on {symbol}")]
    DuplicatePosition {
        /// The symbol reported twice.
        symbol: String,
    },

    /// A stored row handed to [`LedgerState::rebuild`](crate::LedgerState::rebuild) belongs to
    /// another deployment.
    #[error("trade {trade_id} belongs to deployment {found}, not {expected}")]
    WrongDeployment {
        /// The row's id.
        trade_id: Uuid,
        /// The deployment of the state being rebuilt.
        expected: Uuid,
        /// The deployment the row belongs to.
        found: Uuid,
    },

    /// A row handed to `rebuild` as open is closed or has nothing open.
    #[error("trade {trade_id} on {symbol} is not open (status closed or open_qty ≤ 0)")]
    RowNotOpen {
        /// The row's id.
        trade_id: Uuid,
        /// The row's symbol.
        symbol: String,
    },

    /// Two open rows on one symbol handed to `rebuild`.
    #[error("two open trades on {symbol}: {first} and {second}")]
    DuplicateOpenRow {
        /// The symbol with two open rows.
        symbol: String,
        /// The id of the first open row seen.
        first: Uuid,
        /// The id of the second.
        second: Uuid,
    },

    /// Decimal arithmetic left the representable range (about ±7.9e28).
    #[error("arithmetic overflow while {what} on {symbol}")]
    Overflow {
        /// The symbol being processed.
        symbol: String,
        /// The step that overflowed, e.g. `computing MFE/MAE`.
        what: &'static str,
    },
}
