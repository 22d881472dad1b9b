//! The metrics listener: `GET /metrics` in the Prometheus (OpenMetrics) text format and
//! `GET /ready` with the readiness details (what is not ready, the plugins refused and why), on
//! its own address (`LOANHOST_METRICS_LISTEN`) so they are never public by accident. Pool and
//! slot gauges are read from the live state at each scrape.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::state::AppState;
use crate::telemetry::Label;

/// The router of the metrics listener.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/ready", get(ready))
        .with_state(state)
}

/// `GET /ready` on the metrics address: the public probe's status with its details.
async fn ready(State(state): State<AppState>) -> Response {
    let (ok, details) = super::router::readiness(&state).await;
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, axum::Json(details)).into_response()
}

async fn metrics(State(state): State<AppState>) -> Response {
    let plugins = &state.plugins;
    let m = &state.metrics;
    let slots = crate::plugins::MAX_INSTANCES as i64;
    m.plugins_loaded
        .set(plugins.registry().snapshot().len() as i64);
    m.instance_slots.set(slots);
    m.instance_slots_in_use
        .set(slots - plugins.free_slots() as i64);
    m.plugin_memory_bytes.set(plugins.memory_in_use() as i64);
    let mut pools = vec![("identity", state.db.pool_stats())];
    if let Some(reports) = plugins.reports_db() {
        pools.push(("reports", reports.pool_stats()));
    }
    if let Some(store) = plugins.report_store() {
        pools.push(("statements", store.sessions()));
    }
    for (pool, (open, idle)) in pools {
        let gauge = |kind: String| m.db_connections.get_or_create(&Label { kind });
        gauge(format!("{pool}_open")).set(i64::from(open));
        gauge(format!("{pool}_idle")).set(idle as i64);
    }
    // JWKS fetches are counted per process; the counters catch up at each scrape.
    let (ok, failed) = crate::auth::jwks::fetch_counts();
    for (kind, total) in [("ok", ok), ("failed", failed)] {
        let c = m.jwks_refreshes.get_or_create(&Label { kind: kind.into() });
        let seen = c.get();
        if total > seen {
            c.inc_by(total - seen);
        }
    }
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        m.render(),
    )
        .into_response()
}
