//! L1 action signing for the exchange endpoint.
//!
//! The scheme (as the official SDKs implement it):
//! 1. `action_hash = keccak256(msgpack(action) ‖ nonce as u64 big-endian ‖ vault)`, where `vault`
//!    is the byte `0x00` without a vault, else `0x01` followed by the 20 address bytes. The action
//!    is msgpack-encoded as a map whose keys are in wire order — the field order of the structs in
//!    this module.
//! 2. The "phantom agent" `{source: "a" (mainnet) | "b" (testnet), connectionId: action_hash}` is
//!    signed as EIP-712 typed data `Agent(string source,bytes32 connectionId)` under the domain
//!    `{name: "Exchange", version: "1", chainId: 1337, verifyingContract: 0x0…0}`.
//! 3. The secp256k1 signature (RFC 6979 deterministic nonce, low-s) is sent as `{r, s, v}` with
//!    `v = 27 + recovery id`.
//!
//! Cryptography comes from `k256` (ECDSA) and `sha3` (keccak-256); this module only encodes.

use std::fmt;

use k256::ecdsa::SigningKey;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha3::{Digest, Keccak256};

use crate::error::{HlError, Result};
pub use crate::ids::{Address, Cloid, Network};

/// keccak-256 of `data`.
#[must_use]
pub fn keccak256(data: &[u8]) -> [u8; 32] {
    Keccak256::digest(data).into()
}

// ---------------------------------------------------------------------------------------------
// Actions. Field order is wire order: it is what gets msgpack-encoded and hashed.
// ---------------------------------------------------------------------------------------------

/// The exchange actions this adapter sends, tagged by `type` (first key on the wire).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Action {
    /// `{"type": "order", "orders": [...], "grouping": "na"}`
    Order(BulkOrder),
    /// `{"type": "cancel", "cancels": [{"a": asset, "o": oid}]}`
    Cancel(BulkCancel),
    /// `{"type": "cancelByCloid", "cancels": [{"asset": asset, "cloid": "0x…"}]}`
    CancelByCloid(BulkCancelByCloid),
    /// `{"type": "updateLeverage", "asset": asset, "isCross": bool, "leverage": n}`
    UpdateLeverage(UpdateLeverage),
}

/// Sets the account's leverage and margin mode on one asset, as the official SDK's
/// `Exchange.update_leverage` builds it. The exchange answers `{"status": "ok", "response":
/// {"type": "default"}}` or an error; it applies to the asset's next orders and (when allowed)
/// to its open position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateLeverage {
    /// Asset index (position in the perp universe of `meta`).
    pub asset: u32,
    /// `isCross`: cross margin (`true`) or isolated margin (`false`).
    pub is_cross: bool,
    /// The leverage, a whole number from 1 to the asset's `maxLeverage`.
    pub leverage: u32,
}

/// One or more orders placed atomically.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkOrder {
    /// The orders, in the order the exchange processes them.
    pub orders: Vec<OrderWire>,
    /// How the orders relate; [`Grouping::Na`] for independent orders.
    pub grouping: Grouping,
}

/// How orders of one action relate (take-profit / stop-loss grouping).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Grouping {
    /// `na`: independent orders.
    #[serde(rename = "na")]
    Na,
    /// `normalTpsl`: an entry with take-profit / stop-loss triggers sized to it.
    #[serde(rename = "normalTpsl")]
    NormalTpsl,
    /// `positionTpsl`: take-profit / stop-loss triggers on the whole position.
    #[serde(rename = "positionTpsl")]
    PositionTpsl,
}

/// One order as signed: `{a, b, p, s, r, t, c?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderWire {
    /// Asset index (position in the perp universe of `meta`).
    #[serde(rename = "a")]
    pub asset: u32,
    /// `true` for a buy.
    #[serde(rename = "b")]
    pub is_buy: bool,
    /// Limit price, wire-formatted.
    #[serde(rename = "p")]
    pub limit_px: String,
    /// Size in base units, wire-formatted.
    #[serde(rename = "s")]
    pub sz: String,
    /// `r`: the order may only shrink the position.
    #[serde(rename = "r")]
    pub reduce_only: bool,
    /// `t`: limit (with its time in force) or trigger.
    #[serde(rename = "t")]
    pub order_type: OrderTypeWire,
    /// Client order id; the key is absent (not null) without one.
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    pub cloid: Option<Cloid>,
}

/// `{"limit": {"tif": ...}}` or `{"trigger": {"isMarket", "triggerPx", "tpsl"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum OrderTypeWire {
    /// A limit order.
    Limit {
        /// Its time in force.
        tif: Tif,
    },
    /// A trigger (stop / take-profit) order.
    Trigger {
        /// `isMarket`: execute as a market order once triggered (else as a limit at `p`).
        #[serde(rename = "isMarket")]
        is_market: bool,
        /// `triggerPx`: the trigger price, wire-formatted decimal string.
        #[serde(rename = "triggerPx")]
        trigger_px: String,
        /// Take-profit or stop-loss.
        tpsl: Tpsl,
    },
}

/// Time in force of a limit order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Tif {
    /// Good till cancelled.
    Gtc,
    /// Immediate or cancel: what "market" orders are.
    Ioc,
    /// Add liquidity only (post-only).
    Alo,
}

/// Whether a trigger order is a take-profit or a stop-loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tpsl {
    /// `tp`: take-profit.
    Tp,
    /// `sl`: stop-loss.
    Sl,
}

/// Cancels by exchange order id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkCancel {
    /// The orders to cancel.
    pub cancels: Vec<CancelWire>,
}

/// `{"a": asset, "o": oid}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelWire {
    /// `a`: asset index (position in the perp universe of `meta`).
    #[serde(rename = "a")]
    pub asset: u32,
    /// `o`: the exchange's order id.
    #[serde(rename = "o")]
    pub oid: u64,
}

/// Cancels by client order id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkCancelByCloid {
    /// The orders to cancel.
    pub cancels: Vec<CancelByCloidWire>,
}

/// `{"asset": asset, "cloid": "0x…"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelByCloidWire {
    /// Asset index (position in the perp universe of `meta`).
    pub asset: u32,
    /// The client order id the order was sent with.
    pub cloid: Cloid,
}

// ---------------------------------------------------------------------------------------------
// Hashing and signing
// ---------------------------------------------------------------------------------------------

/// The msgpack bytes of an action, maps keyed by field name in declaration order.
///
/// # Errors
/// [`HlError::Msgpack`] if the value cannot be encoded (not for this module's action types).
pub fn msgpack<A: Serialize + ?Sized>(action: &A) -> Result<Vec<u8>> {
    rmp_serde::to_vec_named(action).map_err(|e| HlError::Msgpack(e.to_string()))
}

/// `keccak256(msgpack(action) ‖ nonce_be ‖ vault)`: the `connectionId` the agent signs.
///
/// # Errors
/// [`HlError::Msgpack`] if the action cannot be encoded.
pub fn action_hash<A: Serialize + ?Sized>(
    action: &A,
    nonce: u64,
    vault: Option<&Address>,
) -> Result<[u8; 32]> {
    let mut data = msgpack(action)?;
    data.extend_from_slice(&nonce.to_be_bytes());
    match vault {
        None => data.push(0),
        Some(address) => {
            data.push(1);
            data.extend_from_slice(&address.0);
        }
    }
    Ok(keccak256(&data))
}

const EIP712_DOMAIN_TYPE: &str =
    "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)";
const AGENT_TYPE: &str = "Agent(string source,bytes32 connectionId)";
/// The chain id of the L1 action signing domain (the same on mainnet and testnet).
pub const L1_CHAIN_ID: u64 = 1337;

fn u256_word(x: u64) -> [u8; 32] {
    let mut w = [0u8; 32];
    w[24..].copy_from_slice(&x.to_be_bytes());
    w
}

/// The EIP-712 domain separator of `{name: "Exchange", version: "1", chainId: 1337,
/// verifyingContract: 0x0…0}`.
#[must_use]
pub fn exchange_domain_separator() -> [u8; 32] {
    let mut enc = Vec::with_capacity(5 * 32);
    enc.extend_from_slice(&keccak256(EIP712_DOMAIN_TYPE.as_bytes()));
    enc.extend_from_slice(&keccak256(b"Exchange"));
    enc.extend_from_slice(&keccak256(b"1"));
    enc.extend_from_slice(&u256_word(L1_CHAIN_ID));
    enc.extend_from_slice(&[0u8; 32]); // address(0), left-padded to 32 bytes
    keccak256(&enc)
}

/// The EIP-712 digest (`keccak256(0x1901 ‖ domainSeparator ‖ hashStruct(agent))`) of the phantom
/// agent for `connection_id` on `network`.
#[must_use]
pub fn agent_signing_hash(connection_id: &[u8; 32], network: Network) -> [u8; 32] {
    let mut st = Vec::with_capacity(3 * 32);
    st.extend_from_slice(&keccak256(AGENT_TYPE.as_bytes()));
    st.extend_from_slice(&keccak256(network.source().as_bytes()));
    st.extend_from_slice(connection_id);
    let struct_hash = keccak256(&st);
    let mut msg = Vec::with_capacity(2 + 64);
    msg.extend_from_slice(b"\x19\x01");
    msg.extend_from_slice(&exchange_domain_separator());
    msg.extend_from_slice(&struct_hash);
    keccak256(&msg)
}

/// An Ethereum-style recoverable signature.
///
/// On the wire `r` and `s` are `0x`-prefixed hex **without leading zeros** (the official Python
/// SDK's `to_hex(int)`), `v` is 27 or 28.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signature {
    /// The `r` scalar, big-endian.
    pub r: [u8; 32],
    /// The `s` scalar, big-endian (low-s form).
    pub s: [u8; 32],
    /// The recovery id plus 27: 27 or 28.
    pub v: u8,
}

fn minimal_hex(bytes: &[u8; 32]) -> String {
    let full = hex::encode(bytes);
    let trimmed = full.trim_start_matches('0');
    if trimmed.is_empty() {
        "0x0".to_owned()
    } else {
        format!("0x{trimmed}")
    }
}

fn parse_word(s: &str) -> Option<[u8; 32]> {
    let digits = s.strip_prefix("0x")?;
    if digits.is_empty() || digits.len() > 64 {
        return None;
    }
    let padded = format!("{digits:0>64}");
    let mut out = [0u8; 32];
    hex::decode_to_slice(padded, &mut out).ok()?;
    Some(out)
}

#[derive(Serialize, Deserialize)]
struct SignatureWire {
    r: String,
    s: String,
    v: u8,
}

impl Serialize for Signature {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        SignatureWire {
            r: minimal_hex(&self.r),
            s: minimal_hex(&self.s),
            v: self.v,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Signature {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let w = SignatureWire::deserialize(d)?;
        let word = |name: &str, v: &str| {
            parse_word(v).ok_or_else(|| {
                serde::de::Error::custom(format!("{name}: expected 0x and at most 64 hex digits"))
            })
        };
        Ok(Signature {
            r: word("r", &w.r)?,
            s: word("s", &w.s)?,
            v: w.v,
        })
    }
}

/// A secp256k1 private key that signs exchange actions. Its `Debug` shows only the address; the
/// key itself is never printed or logged.
#[derive(Clone)]
pub struct Signer {
    key: SigningKey,
    address: Address,
}

impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signer")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// Parses a hex private key (64 hex digits, with or without `0x`).
    ///
    /// # Errors
    /// [`HlError::InvalidKey`] when the text is not 32 hex bytes or not a valid secp256k1 scalar.
    /// The error never contains the key.
    pub fn from_hex(key: &str) -> Result<Self> {
        let trimmed = key.trim();
        let digits = trimmed.strip_prefix("0x").unwrap_or(trimmed);
        if digits.len() != 64 {
            return Err(HlError::InvalidKey("expected 64 hex digits"));
        }
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(digits, &mut bytes)
            .map_err(|_| HlError::InvalidKey("not hexadecimal"))?;
        let key = SigningKey::from_slice(&bytes)
            .map_err(|_| HlError::InvalidKey("not a valid secp256k1 secret key"))?;
        bytes.fill(0);
        let point = key.verifying_key().to_encoded_point(false);
        let hash = keccak256(&point.as_bytes()[1..]);
        let mut address = [0u8; 20];
        address.copy_from_slice(&hash[12..]);
        Ok(Signer {
            key,
            address: Address(address),
        })
    }

    /// The account address of this key.
    #[must_use]
    pub fn address(&self) -> Address {
        self.address
    }

    /// Signs a 32-byte digest (already hashed).
    ///
    /// # Errors
    /// [`HlError::Signing`] if the ECDSA signer fails (not expected for a valid key).
    pub fn sign_digest(&self, digest: &[u8; 32]) -> Result<Signature> {
        let (sig, recid) = self
            .key
            .sign_prehash_recoverable(digest)
            .map_err(|e| HlError::Signing(e.to_string()))?;
        let mut r = [0u8; 32];
        let mut s = [0u8; 32];
        r.copy_from_slice(&sig.r().to_bytes());
        s.copy_from_slice(&sig.s().to_bytes());
        Ok(Signature {
            r,
            s,
            v: 27 + recid.to_byte(),
        })
    }
}

/// The result of signing an L1 action: the hash that became the phantom agent's `connectionId`,
/// and the signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignedAction {
    /// Keccak-256 of the action's msgpack bytes, nonce and vault address.
    pub action_hash: [u8; 32],
    /// The signature of the phantom agent carrying that hash.
    pub signature: Signature,
}

/// Signs an L1 action exactly as the official SDKs do (see the module docs).
///
/// # Errors
/// [`HlError::Msgpack`] if the action cannot be encoded; [`HlError::Signing`] if signing fails.
pub fn sign_l1_action<A: Serialize + ?Sized>(
    signer: &Signer,
    action: &A,
    nonce: u64,
    vault: Option<&Address>,
    network: Network,
) -> Result<SignedAction> {
    let hash = action_hash(action, nonce, vault)?;
    let digest = agent_signing_hash(&hash, network);
    Ok(SignedAction {
        action_hash: hash,
        signature: signer.sign_digest(&digest)?,
    })
}

/// The address whose key produced `signature` over `action` at `nonce` (with `vault`, on
/// `network`): the inverse of [`sign_l1_action`], what the exchange does to authenticate a
/// request. A tampered action, nonce or network recovers a different address.
///
/// # Errors
/// [`HlError::Msgpack`] if the action cannot be encoded; [`HlError::Signing`] when the
/// signature is malformed (`v` not 27/28, `r`/`s` out of range) or recovers no key.
pub fn recover_signer<A: Serialize + ?Sized>(
    action: &A,
    nonce: u64,
    vault: Option<&Address>,
    network: Network,
    signature: &Signature,
) -> Result<Address> {
    use k256::ecdsa::{RecoveryId, Signature as EcdsaSignature, VerifyingKey};
    let hash = action_hash(action, nonce, vault)?;
    let digest = agent_signing_hash(&hash, network);
    let recid = signature
        .v
        .checked_sub(27)
        .and_then(RecoveryId::from_byte)
        .ok_or_else(|| HlError::Signing(format!("v must be 27 or 28, got {}", signature.v)))?;
    let sig = EcdsaSignature::from_scalars(signature.r, signature.s)
        .map_err(|e| HlError::Signing(format!("r/s: {e}")))?;
    let key = VerifyingKey::recover_from_prehash(&digest, &sig, recid)
        .map_err(|e| HlError::Signing(format!("recovering the key: {e}")))?;
    let point = key.to_encoded_point(false);
    let hash = keccak256(&point.as_bytes()[1..]);
    let mut address = [0u8; 20];
    address.copy_from_slice(&hash[12..]);
    Ok(Address(address))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_cloids_round_trip_lowercase() {
        let a: Address = "0x14791697260E4c9A71f18484C9f997B308e59325"
            .parse()
            .unwrap();
        assert_eq!(a.to_string(), "0x14791697260e4c9a71f18484c9f997b308e59325");
        assert!("0x1234".parse::<Address>().is_err());
        assert!(
            "14791697260E4c9A71f18484C9f997B308e59325"
                .parse::<Address>()
                .is_err()
        );
        let c: Cloid = "0x00000000000000000000000000000001".parse().unwrap();
        assert_eq!(c.0[15], 1);
        assert_eq!(c.to_string(), "0x00000000000000000000000000000001");
        assert!("0x0001".parse::<Cloid>().is_err());
    }

    #[test]
    fn signature_hex_has_no_leading_zeros_and_parses_back() {
        let mut r = [0u8; 32];
        r[1] = 0x05;
        r[31] = 0x98;
        let sig = Signature {
            r,
            s: [0u8; 32],
            v: 27,
        };
        let json = serde_json::to_value(sig).unwrap();
        assert_eq!(json["r"], format!("0x5{}98", "0".repeat(58)));
        assert_eq!(json["s"], "0x0");
        let back: Signature = serde_json::from_value(json).unwrap();
        assert_eq!(back, sig);
    }

    #[test]
    fn recover_signer_inverts_signing_and_notices_tampering() {
        let signer =
            Signer::from_hex("0x0123456789012345678901234567890123456789012345678901234567890123")
                .unwrap();
        let action = Action::Cancel(BulkCancel {
            cancels: vec![CancelWire { asset: 1, oid: 82 }],
        });
        let signed = sign_l1_action(&signer, &action, 7, None, Network::Testnet).unwrap();
        let who = recover_signer(&action, 7, None, Network::Testnet, &signed.signature).unwrap();
        assert_eq!(who, signer.address());
        // Another nonce or network is another message: some other address.
        let other = recover_signer(&action, 8, None, Network::Testnet, &signed.signature).unwrap();
        assert_ne!(other, signer.address());
        let other = recover_signer(&action, 7, None, Network::Mainnet, &signed.signature).unwrap();
        assert_ne!(other, signer.address());
        let bad_v = Signature {
            v: 29,
            ..signed.signature
        };
        assert!(recover_signer(&action, 7, None, Network::Testnet, &bad_v).is_err());
    }

    #[test]
    fn networks_are_named_exactly() {
        assert_eq!("mainnet".parse::<Network>().unwrap(), Network::Mainnet);
        assert_eq!("testnet".parse::<Network>().unwrap(), Network::Testnet);
        assert!("Mainnet".parse::<Network>().is_err());
        assert_eq!(
            serde_json::to_value(Network::Testnet).unwrap(),
            serde_json::json!("testnet")
        );
        assert_eq!(Network::Mainnet.api_url(), crate::MAINNET_URL);
    }

    #[test]
    fn key_errors_never_echo_the_key() {
        let err =
            Signer::from_hex("0xzz23456789012345678901234567890123456789012345678901234567890123")
                .unwrap_err()
                .to_string();
        assert!(!err.contains("2345678901"), "{err}");
        assert!(Signer::from_hex("0x00").is_err());
        // zero is not a valid scalar
        assert!(Signer::from_hex(&"0".repeat(64)).is_err());
        let signer =
            Signer::from_hex("0x0123456789012345678901234567890123456789012345678901234567890123")
                .unwrap();
        let dbg = format!("{signer:?}");
        assert!(
            !dbg.contains("0123456789012345678901234567890123456789"),
            "{dbg}"
        );
    }
}
