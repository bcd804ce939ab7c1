//! The exchange's maximum leverage per coin from a file: a Hyperliquid `meta` response or a
//! `metaAndAssetCtxs` response (`[meta, ctxs]`), bare or as a recorded `{"request", "response"}`
//! pair.

use std::collections::BTreeMap;
use std::path::Path;

use rust_decimal::Decimal;

use crate::DataError;
use crate::bars::unwrap_recorded;

/// Reads the highest leverage the exchange allows on each listed coin (delisted coins left
/// out), by coin name.
///
/// # Errors
/// [`DataError`] naming the file: unreadable, not JSON, not a `meta`/`metaAndAssetCtxs` shape
/// (the first bad value named), or a universe with no coin.
pub fn load_exchange_max_leverage(path: &Path) -> Result<BTreeMap<String, Decimal>, DataError> {
    let bytes = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
    let body = unwrap_recorded(&bytes).map_err(|m| DataError::file(path, m))?;
    let array = body.first() == Some(&b'[');
    let meta = if array {
        hyperliquid::wire::parse_meta_and_asset_ctxs(&body).map(|m| m.meta)
    } else {
        hyperliquid::wire::parse_meta(&body)
    }
    .map_err(|e| DataError::file(path, e.to_string()))?;
    let max = meta.max_leverage_by_coin();
    if max.is_empty() {
        return Err(DataError::file(path, "the universe lists no tradable coin"));
    }
    Ok(max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    fn load(text: &str) -> Result<BTreeMap<String, Decimal>, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let path = dir.path().join("meta.json");
        std::fs::write(&path, text).map_err(|e| e.to_string())?;
        load_exchange_max_leverage(&path)
            .map_err(|e| e.to_string().replace(&*path.to_string_lossy(), "FILE"))
    }

    #[test]
    fn reads_the_shared_recorded_meta() {
        let path = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../hyperliquid/tests/fixtures/meta.json"
        ));
        let max = load_exchange_max_leverage(path).expect("meta");
        assert_eq!(max.get("BTC"), Some(&dec!(50)));
        assert_eq!(max.get("ETH"), Some(&dec!(50)));
        assert_eq!(max.len(), 28, "every coin of the recorded universe");
    }

    #[test]
    fn reads_meta_and_asset_ctxs_and_leaves_delisted_coins_out() {
        let max = load(
            r#"[{"universe":[{"name":"BTC","szDecimals":5,"maxLeverage":40},
                             {"name":"OLD","szDecimals":1,"maxLeverage":3,"isDelisted":true}]},
                [{"funding":"0.0000125","openInterest":"1","prevDayPx":"1","dayNtlVlm":"1",
                  "premium":"0","oraclePx":"1","markPx":"1","midPx":"1","impactPxs":["1","1"],
                  "dayBaseVlm":"1"},
                 {"funding":"0","openInterest":"0","prevDayPx":"1","dayNtlVlm":"0",
                  "premium":null,"oraclePx":"1","markPx":"1","midPx":null,"impactPxs":null,
                  "dayBaseVlm":"0"}]]"#,
        )
        .expect("metaAndAssetCtxs");
        assert_eq!(max, BTreeMap::from([("BTC".to_owned(), dec!(40))]));
    }

    #[test]
    fn bad_files_are_named() {
        assert_eq!(load("{").unwrap_err().split(": ").next(), Some("FILE"));
        let err = load(r#"{"universe":[{"name":"BTC","szDecimals":5}]}"#).unwrap_err();
        assert!(
            err.starts_with("FILE: ") && err.contains("maxLeverage"),
            "{err}"
        );
        let err = load(r#"{"universe":[]}"#).unwrap_err();
        assert_eq!(err, "FILE: the universe lists no tradable coin");
    }
}
