//! The web chat page: `GET /` and its script and style (`GET /app.js`,
//! `GET /style.css`), the files of `examples/web/` built into the executable.

use axum::Router;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;

/// `GET /`, `GET /app.js`, `GET /style.css`.
pub(super) fn routes() -> Router {
    Router::new()
        .route("/", get(page))
        .route("/app.js", get(script))
        .route("/style.css", get(style))
}

async fn page() -> Html<&'static str> {
    Html(include_str!("../../web/index.html"))
}

async fn script() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("../../web/app.js"),
    )
}

async fn style() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("../../web/style.css"),
    )
}
