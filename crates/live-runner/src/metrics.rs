//! Operations: counters and latency histograms in the Prometheus text format, served with
//! `/healthz` by a small axum server.
//!
//! Latencies are seconds as `f64` (observability only; no money passes here).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

/// Upper bounds (seconds) of the latency buckets.
const BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

#[derive(Debug, Clone, Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, d: Duration) {
        let s = d.as_secs_f64();
        for (i, b) in BUCKETS.iter().enumerate() {
            if s <= *b {
                self.counts[i] += 1;
            }
        }
        self.count += 1;
        self.sum += s;
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} histogram");
        for (i, b) in BUCKETS.iter().enumerate() {
            let _ = writeln!(out, "{name}_bucket{{le=\"{b}\"}} {}", self.counts[i]);
        }
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum {}", self.sum);
        let _ = writeln!(out, "{name}_count {}", self.count);
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// By result: `recorded`, `already_recorded`, `skipped_done`, `failed`.
    ticks: BTreeMap<&'static str, u64>,
    /// Ticks that ran by outcome: `executed`, `rejected`, `no_op`, `model_error`.
    outcomes: BTreeMap<&'static str, u64>,
    /// By rule code.
    rejections: BTreeMap<&'static str, u64>,
    /// By outcome: `note`, `flagged`, `failed`, `store_error`, `already_done` (a redo found
    /// stored), `skipped_in_flight` (due again while the previous one still runs).
    reflections: BTreeMap<&'static str, u64>,
    /// Flattens of stopped deployments by result: `done` (the account is flat), `retry` (a
    /// refusal or a partial close left a position), `failed` (an error), `lease_lost`.
    flattens: BTreeMap<&'static str, u64>,
    /// Alert delivery attempts by result: `delivered`, `retry`, `failed` (given up).
    alerts: BTreeMap<&'static str, u64>,
    /// A tick's reads of the candle cache by how they were served: `cached`, `feed` (after
    /// waiting for the WebSocket feed to close the bar), `fetched` (after a `candleSnapshot`).
    market_reads: BTreeMap<&'static str, u64>,
    /// `candleSnapshot` requests of the candle cache by kind: `backfill` (a series' window),
    /// `update` (the bars since the series' last).
    market_requests: BTreeMap<&'static str, u64>,
    /// Claimed ticks not run because the deployment was no longer active.
    skipped_inactive: u64,
    lease_takeovers: u64,
    leases_lost: u64,
    tick_latency: Histogram,
    model_latency: Histogram,
}

/// The runner's metrics. Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct Metrics {
    inner: Arc<Mutex<Inner>>,
}

impl Metrics {
    fn with<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        let mut guard = match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    /// A tick ended with `result` after `latency`.
    pub fn tick(&self, result: &'static str, latency: Duration) {
        self.with(|m| {
            *m.ticks.entry(result).or_default() += 1;
            m.tick_latency.observe(latency);
        });
    }

    /// How many ticks ended with `result`.
    #[must_use]
    pub fn ticks(&self, result: &str) -> u64 {
        self.with(|m| m.ticks.get(result).copied().unwrap_or(0))
    }

    /// Counts one tick that ran under its outcome (`executed`, `rejected`, `no_op`,
    /// `model_error`: [`tick::OutcomeKind::as_str`]).
    pub fn outcome(&self, outcome: &'static str) {
        self.with(|m| *m.outcomes.entry(outcome).or_default() += 1);
    }

    /// How many ticks ended with `outcome`.
    #[must_use]
    pub fn outcomes(&self, outcome: &str) -> u64 {
        self.with(|m| m.outcomes.get(outcome).copied().unwrap_or(0))
    }

    /// Counts one rejection (by the engine or the broker) under its rule code.
    pub fn rejection(&self, rule: &'static str) {
        self.with(|m| *m.rejections.entry(rule).or_default() += 1);
    }

    /// Counts one reflection run that ended with `outcome` (`note`, `flagged`, `failed`,
    /// `store_error`, `already_done`, `skipped_in_flight`).
    pub fn reflection(&self, outcome: &'static str) {
        self.with(|m| *m.reflections.entry(outcome).or_default() += 1);
    }

    /// How many reflections ended with `outcome`.
    #[must_use]
    pub fn reflections(&self, outcome: &str) -> u64 {
        self.with(|m| m.reflections.get(outcome).copied().unwrap_or(0))
    }

    /// Counts one flatten of a stopped deployment that ended with `result` (`done`, `retry`,
    /// `failed`, `lease_lost`).
    pub fn flatten(&self, result: &'static str) {
        self.with(|m| *m.flattens.entry(result).or_default() += 1);
    }

    /// How many flattens ended with `result`.
    #[must_use]
    pub fn flattens(&self, result: &str) -> u64 {
        self.with(|m| m.flattens.get(result).copied().unwrap_or(0))
    }

    /// Counts one alert delivery attempt that ended with `result` (`delivered`, `retry`,
    /// `failed`).
    pub fn alert(&self, result: &'static str) {
        self.with(|m| *m.alerts.entry(result).or_default() += 1);
    }

    /// How many alert delivery attempts ended with `result`.
    #[must_use]
    pub fn alerts(&self, result: &str) -> u64 {
        self.with(|m| m.alerts.get(result).copied().unwrap_or(0))
    }

    /// Counts one read of the candle cache served as `how` (`cached`, `feed`, `fetched`).
    pub fn market_read(&self, how: &'static str) {
        self.with(|m| *m.market_reads.entry(how).or_default() += 1);
    }

    /// How many reads of the candle cache were served as `how`.
    #[must_use]
    pub fn market_reads(&self, how: &str) -> u64 {
        self.with(|m| m.market_reads.get(how).copied().unwrap_or(0))
    }

    /// Counts one `candleSnapshot` request of the candle cache (`backfill`, `update`).
    pub fn market_request(&self, kind: &'static str) {
        self.with(|m| *m.market_requests.entry(kind).or_default() += 1);
    }

    /// How many `candleSnapshot` requests of `kind` the candle cache made.
    #[must_use]
    pub fn market_requests(&self, kind: &str) -> u64 {
        self.with(|m| m.market_requests.get(kind).copied().unwrap_or(0))
    }

    /// Counts one claimed deployment whose tick did not run because it was paused or stopped
    /// after it was due.
    pub fn skipped_inactive(&self) {
        self.with(|m| m.skipped_inactive += 1);
    }

    /// How many claimed deployments were not ticked because they were no longer active.
    #[must_use]
    pub fn skipped_inactive_count(&self) -> u64 {
        self.with(|m| m.skipped_inactive)
    }

    /// Counts one tick started on a deployment another runner had started and not finished.
    pub fn lease_takeover(&self) {
        self.with(|m| m.lease_takeovers += 1);
    }

    /// How many lease takeovers were counted.
    #[must_use]
    pub fn lease_takeovers(&self) -> u64 {
        self.with(|m| m.lease_takeovers)
    }

    /// Counts one lease found taken by another runner when releasing.
    pub fn lease_lost(&self) {
        self.with(|m| m.leases_lost += 1);
    }

    /// Records the wall time of one model call.
    pub fn model_call(&self, latency: Duration) {
        self.with(|m| m.model_latency.observe(latency));
    }

    /// The Prometheus text exposition of every metric.
    #[must_use]
    pub fn render(&self) -> String {
        self.with(|m| {
            let mut out = String::new();
            let counter = |out: &mut String, name: &str, help: &str| {
                let _ = writeln!(out, "# HELP {name} {help}");
                let _ = writeln!(out, "# TYPE {name} counter");
            };
            counter(&mut out, "live_runner_ticks_total", "Ticks by result.");
            for (k, v) in &m.ticks {
                let _ = writeln!(out, "live_runner_ticks_total{{result=\"{k}\"}} {v}");
            }
            counter(
                &mut out,
                "live_runner_tick_outcomes_total",
                "Ticks that ran by outcome (model_error: every model call failed or the tick's \
                 deadline ran out).",
            );
            for (k, v) in &m.outcomes {
                let _ = writeln!(
                    out,
                    "live_runner_tick_outcomes_total{{outcome=\"{k}\"}} {v}"
                );
            }
            counter(
                &mut out,
                "live_runner_rejections_total",
                "Engine or broker rejections by rule code.",
            );
            for (k, v) in &m.rejections {
                let _ = writeln!(out, "live_runner_rejections_total{{rule=\"{k}\"}} {v}");
            }
            counter(
                &mut out,
                "live_runner_reflections_total",
                "Reflection runs by outcome.",
            );
            for (k, v) in &m.reflections {
                let _ = writeln!(out, "live_runner_reflections_total{{outcome=\"{k}\"}} {v}");
            }
            counter(
                &mut out,
                "live_runner_flattens_total",
                "Flattens of stopped deployments (their positions closed) by result.",
            );
            for (k, v) in &m.flattens {
                let _ = writeln!(out, "live_runner_flattens_total{{result=\"{k}\"}} {v}");
            }
            counter(
                &mut out,
                "live_runner_alert_deliveries_total",
                "Alert delivery attempts by result (delivered, retry, failed: given up).",
            );
            for (k, v) in &m.alerts {
                let _ = writeln!(
                    out,
                    "live_runner_alert_deliveries_total{{result=\"{k}\"}} {v}"
                );
            }
            counter(
                &mut out,
                "live_runner_market_reads_total",
                "Ticks' reads of the candle cache by how they were served (cached, feed, fetched).",
            );
            for (k, v) in &m.market_reads {
                let _ = writeln!(out, "live_runner_market_reads_total{{served=\"{k}\"}} {v}");
            }
            counter(
                &mut out,
                "live_runner_market_requests_total",
                "candleSnapshot requests of the candle cache by kind (backfill, update).",
            );
            for (k, v) in &m.market_requests {
                let _ = writeln!(out, "live_runner_market_requests_total{{kind=\"{k}\"}} {v}");
            }
            counter(
                &mut out,
                "live_runner_skipped_inactive_total",
                "Claimed deployments not ticked because they were paused or stopped meanwhile.",
            );
            let _ = writeln!(
                out,
                "live_runner_skipped_inactive_total {}",
                m.skipped_inactive
            );
            counter(
                &mut out,
                "live_runner_lease_takeovers_total",
                "Ticks started on a deployment another runner had started and not finished.",
            );
            let _ = writeln!(
                out,
                "live_runner_lease_takeovers_total {}",
                m.lease_takeovers
            );
            counter(
                &mut out,
                "live_runner_leases_lost_total",
                "Leases found taken by another runner when releasing.",
            );
            let _ = writeln!(out, "live_runner_leases_lost_total {}", m.leases_lost);
            m.tick_latency.render(
                &mut out,
                "live_runner_tick_seconds",
                "Wall time of one tick, market data to release.",
            );
            m.model_latency.render(
                &mut out,
                "live_runner_model_call_seconds",
                "Wall time of one model call.",
            );
            out
        })
    }
}

/// The `/healthz` + `/metrics` router.
pub fn router(metrics: Metrics) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route(
            "/metrics",
            get(move || {
                let m = metrics.clone();
                async move {
                    (
                        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
                        m.render(),
                    )
                        .into_response()
                }
            }),
        )
}

/// Binds `addr` and serves [`router`] until the process ends.
///
/// # Errors
/// When `addr` cannot be bound.
pub async fn serve(
    addr: SocketAddr,
    metrics: Metrics,
) -> std::io::Result<tokio::task::JoinHandle<()>> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    Ok(tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router(metrics)).await {
            tracing::error!(error = %e, "metrics server stopped");
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_cumulative_buckets() {
        let m = Metrics::default();
        m.tick("recorded", Duration::from_millis(20));
        m.tick("recorded", Duration::from_millis(700));
        m.alert("retry");
        m.rejection("R3_POSITION_CAP");
        m.outcome("model_error");
        m.lease_takeover();
        m.flatten("done");
        let text = m.render();
        assert!(
            text.contains("live_runner_flattens_total{result=\"done\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("live_runner_alert_deliveries_total{result=\"retry\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("live_runner_ticks_total{result=\"recorded\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("live_runner_rejections_total{rule=\"R3_POSITION_CAP\"} 1\n"));
        assert!(text.contains("live_runner_lease_takeovers_total 1\n"));
        assert!(
            text.contains("live_runner_tick_outcomes_total{outcome=\"model_error\"} 1\n"),
            "{text}"
        );
        // 0.02 s falls in le=0.025 and above; 0.7 s only from le=1.
        assert!(
            text.contains("live_runner_tick_seconds_bucket{le=\"0.025\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("live_runner_tick_seconds_bucket{le=\"1\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("live_runner_tick_seconds_count 2\n"));
    }
}
