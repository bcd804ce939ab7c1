//! The runner's news feeds: polled on a schedule of their own, off the tick path, into the
//! store's `news_items`, which every tick then reads point in time (`market::load_news`).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use db::{DeploymentStatus, RegistryStore};
use news::{FeedPoller, FeedReport};

use super::Runner;

/// The feeds a runner polls and how often.
#[derive(Debug, Clone)]
pub struct NewsFeeds {
    /// The poller (its feeds and request timeout).
    pub poller: FeedPoller,
    /// Time between two polls.
    pub every: Duration,
}

impl Runner {
    /// Polls these feeds (every `news.every`, starting when [`Runner::run`] starts) and shows
    /// the stored headlines to every tick. Without it, ticks show no headlines and say so.
    #[must_use]
    pub fn with_news(mut self, news: NewsFeeds) -> Self {
        self.news = Some(news);
        self
    }

    /// [`Runner::with_news`] when `news` is some.
    #[must_use]
    pub fn with_news_opt(self, news: Option<NewsFeeds>) -> Self {
        match news {
            Some(n) => self.with_news(n),
            None => self,
        }
    }

    /// The symbols of every active deployment's skill, sorted, once each (the candidates of
    /// the poller's symbol match). A deployment whose skill cannot be read is logged and left
    /// out.
    async fn news_symbols(&self) -> Vec<String> {
        let deployments = match self
            .store
            .list_deployments(Some(DeploymentStatus::Active))
            .await
        {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "news: listing the active deployments failed");
                return Vec::new();
            }
        };
        let mut symbols = BTreeSet::new();
        for d in &deployments {
            match self.skill(d).await {
                Ok(skill) => symbols.extend(skill.context.symbols.iter().cloned()),
                Err(e) => {
                    tracing::warn!(deployment = %d.id, error = %e, "news: skipping a deployment's symbols")
                }
            }
        }
        symbols.into_iter().collect()
    }

    /// One poll of the configured feeds now (none configured: nothing). Feeds that fail are
    /// logged and reported, never an error.
    pub async fn poll_news(&self) -> Vec<FeedReport> {
        let Some(news) = &self.news else {
            return Vec::new();
        };
        let symbols = self.news_symbols().await;
        news.poller
            .poll(&self.store, &symbols, self.clock.now())
            .await
    }

    /// The background poller of [`Runner::run`]: a poll every `every` after the first, until
    /// the returned guard is dropped.
    pub(super) fn spawn_news_poller(self: &Arc<Self>) -> Option<PollerTask> {
        let every = self.news.as_ref()?.every;
        let me = Arc::clone(self);
        Some(PollerTask(tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                me.poll_news().await;
            }
        })))
    }
}

/// The background poller's task, aborted when dropped.
pub(super) struct PollerTask(tokio::task::JoinHandle<()>);

impl Drop for PollerTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}
