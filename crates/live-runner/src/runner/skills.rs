//! The parsed and validated skills of the deployments a runner ticks, by (skill id, version).
//!
//! A skill version is immutable (`RegistryStore::add_skill_version` never overwrites one), so a
//! version is read from the store and parsed once per process, not at every tick; a deployment
//! moved to a new version finds it missing and parses it once. The cache is bounded: past
//! [`CAPACITY`] versions the least recently used one is dropped (and parsed again if it comes
//! back). A body that does not parse is not cached: every tick reports it again.

use std::num::NonZeroUsize;
use std::sync::Arc;

use db::RegistryStore;
use lru::LruCache;
use skill_schema::{Format, Skill, parse_skill};
use uuid::Uuid;

use super::{RunError, Runner};

/// Most skill versions kept.
pub(super) const CAPACITY: NonZeroUsize = NonZeroUsize::new(256).unwrap();

/// Skills by (skill id, version), least recently used dropped first.
pub(super) type SkillCache = LruCache<(Uuid, i32), Arc<Skill>>;

impl Runner {
    /// The deployment's skill version, parsed and validated (once per version; see the module
    /// documentation).
    ///
    /// # Errors
    /// [`RunError::Db`] when the version cannot be read, [`RunError::Skill`] when its body is
    /// not a valid skill.
    pub(super) async fn skill(&self, d: &db::Deployment) -> Result<Arc<Skill>, RunError> {
        let key = (d.skill_id, d.skill_version);
        if let Some(skill) = self.cached_skills().get(&key) {
            return Ok(skill.clone());
        }
        let version = self
            .store
            .get_skill_version(d.skill_id, d.skill_version)
            .await?;
        let skill = Arc::new(stored_skill(&version)?);
        self.cached_skills().put(key, skill.clone());
        Ok(skill)
    }

    /// How many parsed skill versions this runner keeps (for tests and metrics).
    #[must_use]
    pub fn cached_skill_versions(&self) -> usize {
        self.cached_skills().len()
    }

    fn cached_skills(&self) -> std::sync::MutexGuard<'_, SkillCache> {
        // A panic while the lock was held cannot leave the map half-updated in a way that
        // matters: at worst a version is parsed again.
        self.skills
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The skill document a stored version holds, parsed and validated again.
///
/// # Errors
/// [`RunError::Skill`] naming the skill and version when the stored document no longer
/// validates.
pub(crate) fn stored_skill(version: &db::SkillVersion) -> Result<Skill, RunError> {
    parse_skill(&version.body.to_string(), Format::Json)
        .map(|loaded| loaded.skill)
        .map_err(|e| RunError::Skill {
            skill_id: version.skill_id,
            version: version.version,
            message: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill() -> Arc<Skill> {
        let yaml = include_str!("../../tests/fixtures/btc-sma-cross.yaml");
        Arc::new(parse_skill(yaml, Format::Yaml).unwrap().skill)
    }

    #[test]
    fn keeps_the_most_recently_used_versions() {
        let s = skill();
        let (a, b, c) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let mut cache = SkillCache::new(NonZeroUsize::new(2).unwrap());
        cache.put((a, 1), s.clone());
        cache.put((b, 1), s.clone());
        assert!(cache.get(&(a, 1)).is_some());
        // `b` is the least recently used: it goes.
        cache.put((c, 1), s.clone());
        assert_eq!(cache.len(), 2);
        assert!(cache.get(&(b, 1)).is_none());
        assert!(cache.get(&(a, 1)).is_some());
        assert!(cache.get(&(c, 1)).is_some());
        // A new version of a skill is another entry.
        assert!(cache.get(&(a, 2)).is_none());
        // Inserting a key already held evicts nothing.
        cache.put((a, 1), s);
        assert_eq!(cache.len(), 2);
        assert!(cache.get(&(c, 1)).is_some());
    }
}
