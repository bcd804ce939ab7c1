//! The ids a tick derives: UUID v5 in the deployment's namespace over the deployment, a kind
//! and the time (written as RFC 3339 with nanoseconds), so a re-run derives the same ids.

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// The namespace of every id this crate derives (UUID v5 of `tick-ids`).
pub const ID_NAMESPACE: Uuid = Uuid::from_u128(0x6f1c_2a4e_9b3d_4e57_8a21_5c0d_e7f4_1b92);

/// The decision snapshot id of the tick at `at`: UUID v5 over the deployment and the time.
#[must_use]
pub fn snapshot_id(deployment_id: Uuid, at: DateTime<Utc>) -> Uuid {
    derive_id(deployment_id, "snapshot", at)
}

/// The id of the note a reflection at `at` writes.
#[must_use]
pub fn note_id(deployment_id: Uuid, at: DateTime<Utc>) -> Uuid {
    derive_id(deployment_id, "note", at)
}

/// The id of the reflection run at `at`.
#[must_use]
pub fn run_id(deployment_id: Uuid, at: DateTime<Utc>) -> Uuid {
    derive_id(deployment_id, "reflection-run", at)
}

fn derive_id(deployment_id: Uuid, kind: &str, at: DateTime<Utc>) -> Uuid {
    // `{deployment_id}\n{kind}\n{at as RFC 3339 with nanoseconds and Z}`, written in place.
    let mut name = String::with_capacity(80);
    name.push_str(
        deployment_id
            .hyphenated()
            .encode_lower(&mut Uuid::encode_buffer()),
    );
    name.push('\n');
    name.push_str(kind);
    name.push('\n');
    types::text::push_rfc3339(&mut name, at, chrono::SecondsFormat::Nanos);
    new_v5(&ID_NAMESPACE, name.as_bytes())
}

/// `Uuid::new_v5` with the `sha1` crate's hash, which uses the CPU's SHA instructions where it
/// has them: the same 20-byte digest, so the same id.
fn new_v5(namespace: &Uuid, name: &[u8]) -> Uuid {
    use sha1::Digest as _;
    let mut hasher = sha1::Sha1::new();
    hasher.update(namespace.as_bytes());
    hasher.update(name);
    let digest: [u8; 20] = hasher.finalize().into();
    let mut bytes = [0_u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_sha1_bytes(bytes).into_uuid()
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use proptest::prelude::*;

    use super::*;

    /// The ids as first derived (through `format!` and chrono): [`derive_id`] must give the same.
    fn reference_id(deployment_id: Uuid, kind: &str, at: DateTime<Utc>) -> Uuid {
        let name = format!(
            "{deployment_id}\n{kind}\n{}",
            at.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
        );
        Uuid::new_v5(&ID_NAMESPACE, name.as_bytes())
    }

    fn instant() -> impl Strategy<Value = DateTime<Utc>> {
        prop_oneof![
            // Any second and nanosecond from year 0 to 9999, and beyond on both sides.
            (-62_167_219_200i64..253_402_300_800, 0u32..1_000_000_000),
            (-100_000_000_000i64..100_000_000_000, 0u32..1_000_000_000),
            // Leap seconds.
            (0i64..4_000_000_000, 1_000_000_000u32..2_000_000_000)
                .prop_map(|(s, n)| (s - s.rem_euclid(60) + 59, n)),
        ]
        .prop_filter_map("representable", |(secs, nanos)| {
            DateTime::from_timestamp(secs, nanos)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn ids_are_derived_from_the_same_text(
            at in instant(),
            deployment in any::<u128>(),
            kind in prop::sample::select(vec!["snapshot", "note", "reflection-run"]),
        ) {
            let d = Uuid::from_u128(deployment);
            prop_assert_eq!(derive_id(d, kind, at), reference_id(d, kind, at));
        }

        /// Every name length, across SHA-1's 64-byte blocks and its padding's edges.
        #[test]
        fn v5_ids_are_uuids_own(
            namespace in any::<u128>(),
            name in prop::collection::vec(any::<u8>(), 0..300),
        ) {
            let ns = Uuid::from_u128(namespace);
            prop_assert_eq!(new_v5(&ns, &name), Uuid::new_v5(&ns, &name));
        }
    }

    #[test]
    fn the_snapshot_id_of_a_known_tick_is_stable() {
        let d = Uuid::from_u128(0x1234_5678_9abc_def0_1234_5678_9abc_def0);
        let at = Utc.with_ymd_and_hms(2017, 4, 19, 10, 0, 0).unwrap();
        assert_eq!(snapshot_id(d, at), reference_id(d, "snapshot", at));
        assert_eq!(note_id(d, at), reference_id(d, "note", at));
        assert_eq!(run_id(d, at), reference_id(d, "reflection-run", at));
    }
}
