//! The web chat page: `GET /` and its script and style (`GET /app.js`,
//! `GET /style.css`), the files of `examples/web/` built into the executable.

use axum::http::header;
use axum::response::{Html, IntoResponse};

pub(super) async fn page() -> Html<&'static str> {
    Html(include_str!("../../web/index.html"))
}

pub(super) async fn script() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("../../web/app.js"),
    )
}

pub(super) async fn style() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("../../web/style.css"),
    )
}
