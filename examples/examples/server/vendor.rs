//! Third-party browser code the page uses, served from a local install (no CDN):
//! `GET /vendor/mermaid.min.js` is Mermaid's `dist/mermaid.min.js` from npm, read from
//! the file `AGENT_MERMAID_JS` names (`scripts/protocols.sh` installs it and prints the
//! path). Without it the route is a `404` and the page shows the flow graph as Mermaid
//! text instead of a picture.

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The environment variable with the path of `mermaid.min.js`.
pub const MERMAID_ENV: &str = "AGENT_MERMAID_JS";

/// The path of `mermaid.min.js` from [`MERMAID_ENV`], when it is set and not empty.
pub fn mermaid_from_env() -> Option<PathBuf> {
    std::env::var_os(MERMAID_ENV)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// `GET /vendor/mermaid.min.js`, read from `mermaid` (on every request: a reinstall
/// needs no restart).
pub fn routes(mermaid: Option<PathBuf>) -> Router {
    let mermaid = Arc::new(mermaid);
    Router::new().route(
        "/vendor/mermaid.min.js",
        get(move || {
            let mermaid = Arc::clone(&mermaid);
            async move { serve_file(mermaid.as_ref().clone()).await }
        }),
    )
}

async fn serve_file(path: Option<PathBuf>) -> Response {
    let Some(path) = path else {
        return (
            StatusCode::NOT_FOUND,
            format!("mermaid is not configured: run scripts/protocols.sh and set {MERMAID_ENV}"),
        )
            .into_response();
    };
    let shown = path.display().to_string();
    match tokio::task::spawn_blocking(move || std::fs::read(path)).await {
        Ok(Ok(bytes)) => (
            [
                (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
                (header::CACHE_CONTROL, "public, max-age=3600"),
            ],
            bytes,
        )
            .into_response(),
        Ok(Err(e)) => (
            StatusCode::NOT_FOUND,
            format!("{MERMAID_ENV}={shown} cannot be read: {e}"),
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}
