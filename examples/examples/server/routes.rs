//! The server over the library: the agent behind `agent_core::serve` (the OpenAI-
//! compatible endpoint, AG-UI and the web chat's API, authenticated by bearer tokens),
//! plus the chat page and the vendored Mermaid.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use agent_core::serve::{Authenticator, BearerTokens, ServeError, Server};
use axum::Router;

use super::booking::BookingAgent;
use super::{page, vendor};

/// The model name the OpenAI-compatible endpoint answers to.
pub const MODEL_ID: &str = "concierge";

/// Where the server logs what went wrong (stderr; tests keep the lines).
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// The server's two bearer tokens: the chat user's (`AGENT_TOKEN`) and the operator's
/// (`AGENT_OPERATOR_TOKEN`), who decides the bookings waiting for approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tokens {
    /// The chat user's token (principal `guest`).
    pub user: String,
    /// The operator's token (principal `operator`).
    pub operator: String,
}

/// A random token (std's hasher keys are random per process).
fn random_token() -> String {
    (0..2)
        .map(|_| {
            let mut h = RandomState::new().build_hasher();
            h.write_u64(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64),
            );
            format!("{:016x}", h.finish())
        })
        .collect()
}

impl Tokens {
    /// The tokens `env` names (`AGENT_TOKEN`, `AGENT_OPERATOR_TOKEN`), each generated
    /// when unset; the flags say which were generated.
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> (Self, [bool; 2]) {
        let get = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let user = get("AGENT_TOKEN");
        let operator = get("AGENT_OPERATOR_TOKEN");
        let generated = [user.is_none(), operator.is_none()];
        (
            Self {
                user: user.unwrap_or_else(random_token),
                operator: operator.unwrap_or_else(random_token),
            },
            generated,
        )
    }

    /// The authenticator: the user is `guest`, the operator `operator`.
    pub fn auth(&self) -> BearerTokens {
        BearerTokens::new()
            .user(&self.user, "guest")
            .operator(&self.operator, "operator")
    }
}

/// The router: the page, its assets and every protocol over `agent`, logging failures
/// on stderr.
pub fn app(agent: Arc<BookingAgent>, tokens: &Tokens) -> Result<Router, ServeError> {
    app_with(
        agent,
        tokens.auth(),
        &[],
        Arc::new(|line: &str| eprintln!("{line}")),
    )
}

/// [`app`] authenticated by `auth`, allowing browser pages from `origins` (CORS) and
/// logging to `log`.
pub fn app_with(
    agent: Arc<BookingAgent>,
    auth: impl Authenticator,
    origins: &[String],
    log: Log,
) -> Result<Router, ServeError> {
    let server = Server::builder((*agent).clone())
        .auth(auth)
        .model(MODEL_ID)
        .allowed_origins(origins.iter().cloned())
        .log(move |line: &str| log(line))
        .build()?;
    Ok(server
        .router()
        .merge(page::routes())
        .merge(vendor::routes(vendor::mermaid_from_env())))
}
