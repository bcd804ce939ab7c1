//! Every vector of `fixtures/signing_vectors.json` (computed with the official Python SDK) must be
//! reproduced exactly: action hash, phantom agent, and r/s/v.

use hyperliquid::signing::{
    Action, Address, Network, Signer, agent_signing_hash, keccak256, sign_l1_action,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The SDK's test-only `{"type": "dummy", "num": ...}` action. It is not an exchange action, so it
/// is not part of [`Action`]; it still goes through the same generic signing path.
#[derive(Debug, Serialize, Deserialize)]
struct Dummy {
    #[serde(rename = "type")]
    kind: String,
    num: u64,
}

#[derive(Debug, Deserialize)]
struct Vectors {
    private_key: String,
    address: String,
    vectors: Vec<Vector>,
}

#[derive(Debug, Deserialize)]
struct Vector {
    name: String,
    action: Value,
    vault_address: Option<String>,
    nonce: u64,
    is_mainnet: bool,
    action_hash: String,
    phantom_agent: Value,
    signature: Value,
}

fn load() -> Vectors {
    serde_json::from_str(include_str!("../fixtures/signing_vectors.json")).unwrap()
}

#[test]
fn test_key_derives_the_published_address() {
    let v = load();
    let signer = Signer::from_hex(&v.private_key).unwrap();
    let want: Address = v.address.parse().unwrap();
    assert_eq!(signer.address(), want);
}

#[test]
fn every_vector_reproduces_hash_agent_and_signature() {
    let v = load();
    assert_eq!(v.vectors.len(), 14);
    assert_eq!(
        check_all(&v),
        10,
        "every non-dummy vector goes through the typed Action enum"
    );
}

/// The stop-loss / take-profit trigger orders (`normalTpsl` with the entry, `positionTpsl` on a
/// long and a short) and a cancel by client order id, from `make_trigger_signing_vectors.py`.
#[test]
fn every_trigger_vector_reproduces_hash_agent_and_signature() {
    let v: Vectors =
        serde_json::from_str(include_str!("../fixtures/trigger_signing_vectors.json")).unwrap();
    assert_eq!(v.address, load().address, "the same published test key");
    assert_eq!(v.vectors.len(), 8);
    assert_eq!(check_all(&v), 8);
    let groupings: Vec<&str> = v
        .vectors
        .iter()
        .filter_map(|x| x.action["grouping"].as_str())
        .collect();
    assert!(groupings.contains(&"normalTpsl") && groupings.contains(&"positionTpsl"));
}

/// `updateLeverage` (cross and isolated, one- and two-byte msgpack integers) on mainnet and
/// testnet, from `make_leverage_signing_vectors.py`; and the typed action the client sends is
/// the vector's action.
#[test]
fn every_leverage_vector_reproduces_hash_agent_and_signature() {
    use hyperliquid::UpdateLeverage;
    let v: Vectors =
        serde_json::from_str(include_str!("../fixtures/leverage_signing_vectors.json")).unwrap();
    assert_eq!(v.address, load().address, "the same published test key");
    assert_eq!(v.vectors.len(), 6);
    assert_eq!(check_all(&v), 6);
    let isolated = v
        .vectors
        .iter()
        .find(|x| x.name == "update_leverage_isolated" && !x.is_mainnet)
        .unwrap();
    let action = Action::UpdateLeverage(UpdateLeverage {
        asset: 1,
        is_cross: false,
        leverage: 3,
    });
    assert_eq!(serde_json::to_value(&action).unwrap(), isolated.action);
    let mainnet: Vec<bool> = v.vectors.iter().map(|x| x.is_mainnet).collect();
    assert!(mainnet.contains(&true) && mainnet.contains(&false));
}

/// Checks every vector of `v`; returns how many went through the typed [`Action`].
fn check_all(v: &Vectors) -> usize {
    let signer = Signer::from_hex(&v.private_key).unwrap();
    let mut typed = 0;
    for vec in &v.vectors {
        let label = format!("{} (mainnet={})", vec.name, vec.is_mainnet);
        let network = if vec.is_mainnet {
            Network::Mainnet
        } else {
            Network::Testnet
        };
        let vault: Option<Address> = vec.vault_address.as_deref().map(|a| a.parse().unwrap());
        let signed = if vec.action["type"] == "dummy" {
            let action: Dummy = serde_json::from_value(vec.action.clone()).unwrap();
            sign_l1_action(&signer, &action, vec.nonce, vault.as_ref(), network).unwrap()
        } else {
            let action: Action = serde_json::from_value(vec.action.clone())
                .unwrap_or_else(|e| panic!("{label}: not a typed action: {e}"));
            // The typed action re-serializes to exactly the wire JSON of the vector.
            assert_eq!(
                serde_json::to_value(&action).unwrap(),
                vec.action,
                "{label}"
            );
            typed += 1;
            sign_l1_action(&signer, &action, vec.nonce, vault.as_ref(), network).unwrap()
        };
        let hash_hex = format!("0x{}", hex_lower(&signed.action_hash));
        assert_eq!(hash_hex, vec.action_hash, "{label}: action hash");
        assert_eq!(vec.phantom_agent["source"], network.source(), "{label}");
        assert_eq!(
            vec.phantom_agent["connectionId"],
            hash_hex.as_str(),
            "{label}"
        );
        assert_eq!(
            serde_json::to_value(signed.signature).unwrap(),
            vec.signature,
            "{label}: signature"
        );
        // The signature recovers to the signer's address over the EIP-712 digest.
        let digest = agent_signing_hash(&signed.action_hash, network);
        assert_eq!(
            recover(&digest, &signed.signature),
            signer.address(),
            "{label}"
        );
    }
    typed
}

fn hex_lower(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn recover(digest: &[u8; 32], sig: &hyperliquid::signing::Signature) -> Address {
    use k256::ecdsa::{RecoveryId, Signature as K256Sig, VerifyingKey};
    let mut rs = [0u8; 64];
    rs[..32].copy_from_slice(&sig.r);
    rs[32..].copy_from_slice(&sig.s);
    let sig64 = K256Sig::from_slice(&rs).unwrap();
    let recid = RecoveryId::from_byte(sig.v - 27).unwrap();
    let vk = VerifyingKey::recover_from_prehash(digest, &sig64, recid).unwrap();
    let point = vk.to_encoded_point(false);
    let hash = keccak256(&point.as_bytes()[1..]);
    let mut a = [0u8; 20];
    a.copy_from_slice(&hash[12..]);
    Address(a)
}

/// The typed requests build exactly the SDK's wire of the `order_normal_tpsl` vector: an IOC
/// entry with its stop-loss (1 % worst price) and take-profit (5 %) triggers, reduce-only.
#[test]
fn trigger_order_requests_build_the_sdks_wire() {
    use hyperliquid::signing::{BulkOrder, Grouping, Tpsl};
    use hyperliquid::{AssetInfo, Cloid, OrderRequest, Tif, TriggerOrderRequest};
    use types::OrderSide;

    let v: Vectors =
        serde_json::from_str(include_str!("../fixtures/trigger_signing_vectors.json")).unwrap();
    let want = &v
        .vectors
        .iter()
        .find(|x| x.name == "order_normal_tpsl")
        .unwrap()
        .action;
    let btc = AssetInfo {
        index: 0,
        sz_decimals: 5,
        max_leverage: 50,
    };
    let cloid = |n: u8| {
        let mut b = [0u8; 16];
        b[15] = n;
        Some(Cloid(b))
    };
    let entry = OrderRequest {
        asset: btc,
        side: OrderSide::Buy,
        price: "30300".parse().unwrap(),
        size: "0.01".parse().unwrap(),
        reduce_only: false,
        tif: Tif::Ioc,
        cloid: cloid(1),
    };
    let trigger = |px: &str, tpsl, slip: &str, n| TriggerOrderRequest {
        asset: btc,
        side: OrderSide::Sell,
        size: "0.01".parse().unwrap(),
        trigger_px: px.parse().unwrap(),
        tpsl,
        max_slippage: slip.parse().unwrap(),
        cloid: cloid(n),
    };
    let action = Action::Order(BulkOrder {
        orders: vec![
            entry.to_wire().unwrap(),
            trigger("28500", Tpsl::Sl, "0.01", 2).to_wire().unwrap(),
            trigger("33000", Tpsl::Tp, "0.05", 3).to_wire().unwrap(),
        ],
        grouping: Grouping::NormalTpsl,
    });
    assert_eq!(&serde_json::to_value(&action).unwrap(), want);
}
