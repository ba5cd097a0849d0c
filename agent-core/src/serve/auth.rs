//! Who calls: the [`Principal`] an [`Authenticator`] finds in a request's headers, and
//! which principal owns which session ([`SessionOwners`]).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use axum::http::{HeaderMap, header};

/// The caller of a request, as the [`Authenticator`] names it.
///
/// A session belongs to the first principal that writes to it: another principal's
/// request on it is refused (`403`) and it is never listed to them. An operator
/// ([`Principal::operator`]) decides the tool calls that wait for a person's approval,
/// on any session, and may read any session; nobody else can decide a call.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Principal {
    id: String,
    operator: bool,
    anonymous: bool,
}

impl Principal {
    /// A user: owns the sessions it starts, decides no approval.
    pub fn user(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            operator: false,
            anonymous: false,
        }
    }

    /// An operator: decides approvals on any session and may read any session.
    pub fn operator(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            operator: true,
            anonymous: false,
        }
    }

    /// The caller of a server without authentication ([`Anonymous`]): every caller is
    /// this one principal, so sessions are not kept apart, and it decides no approval.
    pub fn anonymous() -> Self {
        Self {
            id: "anonymous".into(),
            operator: false,
            anonymous: true,
        }
    }

    /// The principal's id (what owns sessions).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether it may decide tool calls waiting for approval.
    pub fn is_operator(&self) -> bool {
        self.operator
    }

    /// Whether the server authenticates nobody ([`Principal::anonymous`]).
    pub fn is_anonymous(&self) -> bool {
        self.anonymous
    }
}

/// Why a request is not authenticated: answered with a `401`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No credential in the request.
    #[error("no credential: send `Authorization: Bearer <token>`")]
    Missing,
    /// A credential the server does not know.
    #[error("the credential is not valid")]
    Invalid,
    /// Refused by the application's authenticator, with its reason.
    #[error("{0}")]
    Refused(String),
}

/// Finds the caller of a request in its headers. Implement it to use the application's
/// own authentication (a session cookie, a JWT, an API gateway's header); the server
/// calls it on every request of every route.
#[async_trait]
pub trait Authenticator: Send + Sync + 'static {
    /// The caller, or why the request is refused (`401`).
    async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, AuthError>;
}

/// The bearer token of an `Authorization` header, if any.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// Static bearer tokens (`Authorization: Bearer <token>`, what OpenAI clients send as
/// their API key), each naming a user or an operator.
///
/// ```
/// use agent_core::serve::BearerTokens;
/// let tokens = BearerTokens::new()
///     .user("token-of-ana", "ana")
///     .operator("token-of-the-desk", "desk");
/// # let _ = tokens;
/// ```
#[derive(Debug, Clone, Default)]
pub struct BearerTokens {
    tokens: HashMap<String, Principal>,
}

impl BearerTokens {
    /// No token yet: every request is refused until tokens are added.
    pub fn new() -> Self {
        Self::default()
    }

    /// `token` authenticates the user `id`.
    pub fn user(mut self, token: impl Into<String>, id: impl Into<String>) -> Self {
        self.tokens.insert(token.into(), Principal::user(id));
        self
    }

    /// `token` authenticates the operator `id` (approval decisions).
    pub fn operator(mut self, token: impl Into<String>, id: impl Into<String>) -> Self {
        self.tokens.insert(token.into(), Principal::operator(id));
        self
    }
}

#[async_trait]
impl Authenticator for BearerTokens {
    async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, AuthError> {
        let token = bearer_token(headers).ok_or(AuthError::Missing)?;
        // Every stored token is compared, in constant time for equal lengths, so the
        // answer's timing does not tell which prefix of a token was right.
        let mut found = None;
        for (known, principal) in &self.tokens {
            if constant_time_eq(known.as_bytes(), token.as_bytes()) {
                found = Some(principal.clone());
            }
        }
        found.ok_or(AuthError::Invalid)
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// No authentication: every caller is [`Principal::anonymous`], sessions are not kept
/// apart and nobody can decide an approval over HTTP. For a server on a developer's
/// machine only.
#[derive(Debug, Clone, Copy, Default)]
pub struct Anonymous;

#[async_trait]
impl Authenticator for Anonymous {
    async fn authenticate(&self, _: &HeaderMap) -> Result<Principal, AuthError> {
        Ok(Principal::anonymous())
    }
}

/// Which principal owns which session. The default ([`MemoryOwners`]) lives in the
/// server's memory: after a restart, the sessions of a durable store have no owner until
/// a principal writes to them again, and any principal may claim them then. Implement
/// this trait to keep ownership with the sessions (a table next to the session store)
/// so it survives a restart.
#[async_trait]
pub trait SessionOwners: Send + Sync + 'static {
    /// The owner of `session`, if it has one.
    async fn owner(&self, session: &str) -> Option<String>;
    /// Make `principal` the owner of `session` if it has none. `true` when `principal`
    /// owns it now (just claimed, or before); `false` when another principal does.
    async fn claim(&self, session: &str, principal: &str) -> bool;
    /// The sessions `principal` owns, sorted.
    async fn sessions_of(&self, principal: &str) -> Vec<String>;
}

/// [`SessionOwners`] in memory (lost on restart: see [`SessionOwners`]).
#[derive(Debug, Clone, Default)]
pub struct MemoryOwners {
    owners: Arc<Mutex<HashMap<String, String>>>,
}

impl MemoryOwners {
    /// No session owned yet.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl SessionOwners for MemoryOwners {
    async fn owner(&self, session: &str) -> Option<String> {
        let owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        owners.get(session).cloned()
    }

    async fn claim(&self, session: &str, principal: &str) -> bool {
        let mut owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        owners
            .entry(session.to_owned())
            .or_insert_with(|| principal.to_owned())
            == principal
    }

    async fn sessions_of(&self, principal: &str) -> Vec<String> {
        let owners = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        let mine: BTreeSet<&String> = owners
            .iter()
            .filter(|(_, p)| p.as_str() == principal)
            .map(|(s, _)| s)
            .collect();
        mine.into_iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bearer_tokens_name_their_principal() {
        let tokens = BearerTokens::new()
            .user("t-ana", "ana")
            .operator("t-op", "desk");
        let mut h = HeaderMap::new();
        assert_eq!(tokens.authenticate(&h).await, Err(AuthError::Missing));
        h.insert(header::AUTHORIZATION, "Bearer t-ana".parse().unwrap());
        assert_eq!(tokens.authenticate(&h).await, Ok(Principal::user("ana")));
        h.insert(header::AUTHORIZATION, "bearer t-op".parse().unwrap());
        assert!(tokens.authenticate(&h).await.unwrap().is_operator());
        h.insert(header::AUTHORIZATION, "Bearer t-anb".parse().unwrap());
        assert_eq!(tokens.authenticate(&h).await, Err(AuthError::Invalid));
    }

    #[tokio::test]
    async fn a_session_belongs_to_its_first_principal() {
        let o = MemoryOwners::new();
        assert!(o.claim("s1", "ana").await);
        assert!(o.claim("s1", "ana").await);
        assert!(!o.claim("s1", "bob").await);
        assert!(o.claim("s2", "bob").await);
        assert_eq!(o.sessions_of("ana").await, ["s1"]);
        assert_eq!(o.owner("s2").await.as_deref(), Some("bob"));
    }
}
