//! What names a chain, an account and an order on the wire: [`Network`] (with its public API
//! URL), [`Address`], [`Cloid`]. No cryptography and no HTTP: the parsers need them too.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{HlError, Result};

/// Mainnet API base URL.
pub const MAINNET_URL: &str = "https://api.hyperliquid.xyz";
/// Testnet API base URL.
pub const TESTNET_URL: &str = "https://api.hyperliquid-testnet.xyz";

fn parse_hex_exact<const N: usize>(s: &str) -> Option<[u8; N]> {
    let digits = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    if digits.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    hex::decode_to_slice(digits, &mut out).ok()?;
    Some(out)
}

/// Which chain an action is meant for; it is part of what gets signed. Serialized as
/// `"mainnet"` / `"testnet"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// The production chain, [`MAINNET_URL`].
    Mainnet,
    /// The test chain, [`TESTNET_URL`].
    Testnet,
}

impl Network {
    /// The phantom agent's `source`: `"a"` on mainnet, `"b"` on testnet.
    #[must_use]
    pub const fn source(self) -> &'static str {
        match self {
            Network::Mainnet => "a",
            Network::Testnet => "b",
        }
    }

    /// `"mainnet"` or `"testnet"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Network::Mainnet => "mainnet",
            Network::Testnet => "testnet",
        }
    }

    /// The public API of this network ([`MAINNET_URL`] or [`TESTNET_URL`]).
    #[must_use]
    pub const fn api_url(self) -> &'static str {
        match self {
            Network::Mainnet => MAINNET_URL,
            Network::Testnet => TESTNET_URL,
        }
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Network {
    type Err = HlError;

    /// `mainnet` or `testnet` (exactly; the network is never guessed).
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "mainnet" => Ok(Network::Mainnet),
            "testnet" => Ok(Network::Testnet),
            other => Err(HlError::InvalidNetwork(other.to_owned())),
        }
    }
}

/// A 20-byte account or vault address, written `0x` + 40 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Address(pub [u8; 20]);

impl FromStr for Address {
    type Err = HlError;

    fn from_str(s: &str) -> Result<Self> {
        parse_hex_exact::<20>(s)
            .map(Address)
            .ok_or_else(|| HlError::InvalidAddress(s.to_owned()))
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{}", hex::encode(self.0))
    }
}

impl fmt::Debug for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for Address {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Address {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A client order id: 16 bytes, written `0x` + 32 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cloid(pub [u8; 16]);

impl FromStr for Cloid {
    type Err = HlError;

    fn from_str(s: &str) -> Result<Self> {
        parse_hex_exact::<16>(s)
            .map(Cloid)
            .ok_or_else(|| HlError::InvalidCloid(s.to_owned()))
    }
}

impl fmt::Display for Cloid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{}", hex::encode(self.0))
    }
}

impl fmt::Debug for Cloid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for Cloid {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Cloid {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}
