//! The parsed and validated skills of the deployments a runner ticks, by (skill id, version).
//!
//! A skill version is immutable (`RegistryStore::add_skill_version` never overwrites one), so a
//! version is read from the store and parsed once per process, not at every tick; a deployment
//! moved to a new version finds it missing and parses it once. The cache is bounded: past
//! [`CAPACITY`] versions the least recently used one is dropped (and parsed again if it comes
//! back). A body that does not parse is not cached: every tick reports it again.

use std::collections::HashMap;
use std::sync::Arc;

use db::RegistryStore;
use skill_schema::{Format, Skill, parse_skill};
use uuid::Uuid;

use super::{RunError, Runner};

/// Most skill versions kept.
pub(super) const CAPACITY: usize = 256;

/// Skills by (skill id, version), with the use that last touched each (for eviction).
pub(super) struct SkillCache {
    capacity: usize,
    uses: u64,
    skills: HashMap<(Uuid, i32), (Arc<Skill>, u64)>,
}

impl SkillCache {
    pub(super) fn new(capacity: usize) -> Self {
        SkillCache {
            capacity: capacity.max(1),
            uses: 0,
            skills: HashMap::new(),
        }
    }

    fn get(&mut self, key: (Uuid, i32)) -> Option<Arc<Skill>> {
        self.uses += 1;
        let uses = self.uses;
        self.skills.get_mut(&key).map(|(skill, used)| {
            *used = uses;
            skill.clone()
        })
    }

    fn insert(&mut self, key: (Uuid, i32), skill: Arc<Skill>) {
        if !self.skills.contains_key(&key)
            && self.skills.len() >= self.capacity
            && let Some(oldest) = self
                .skills
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| *k)
        {
            self.skills.remove(&oldest);
        }
        self.uses += 1;
        self.skills.insert(key, (skill, self.uses));
    }

    fn len(&self) -> usize {
        self.skills.len()
    }
}

impl Runner {
    /// The deployment's skill version, parsed and validated (once per version; see the module
    /// documentation).
    ///
    /// # Errors
    /// [`RunError::Db`] when the version cannot be read, [`RunError::Skill`] when its body is
    /// not a valid skill.
    pub(super) async fn skill(&self, d: &db::Deployment) -> Result<Arc<Skill>, RunError> {
        let key = (d.skill_id, d.skill_version);
        if let Some(skill) = self.cached_skills().get(key) {
            return Ok(skill);
        }
        let version = self
            .store
            .get_skill_version(d.skill_id, d.skill_version)
            .await?;
        let skill = parse_skill(&version.body.to_string(), Format::Json)
            .map_err(|e| RunError::Skill {
                skill_id: d.skill_id,
                version: d.skill_version,
                message: e.to_string(),
            })?
            .skill;
        let skill = Arc::new(skill);
        self.cached_skills().insert(key, skill.clone());
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
        let mut cache = SkillCache::new(2);
        cache.insert((a, 1), s.clone());
        cache.insert((b, 1), s.clone());
        assert!(cache.get((a, 1)).is_some());
        // `b` is the least recently used: it goes.
        cache.insert((c, 1), s.clone());
        assert_eq!(cache.len(), 2);
        assert!(cache.get((b, 1)).is_none());
        assert!(cache.get((a, 1)).is_some());
        assert!(cache.get((c, 1)).is_some());
        // A new version of a skill is another entry.
        assert!(cache.get((a, 2)).is_none());
        // Inserting a key already held evicts nothing.
        cache.insert((a, 1), s);
        assert_eq!(cache.len(), 2);
        assert!(cache.get((c, 1)).is_some());
    }
}
