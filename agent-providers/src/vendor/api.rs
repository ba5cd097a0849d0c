//! The public face every vendor client shares, written once: the builder methods
//! (model, headers, HTTP client, timeouts, defaults), `Debug` (which never shows the
//! key), [`WithModel`](crate::WithModel) and [`Provider`](agent_core::provider::Provider).
//! A macro, because the clients are distinct public types with inherent methods
//! (callers need no trait in scope), each a struct with a `client: Client<_>` field.

/// Implements the shared public API on `$client`, a struct with a
/// `client: crate::vendor::Client<_>` field.
macro_rules! client_api {
    ($client:ty) => {
        impl $client {
            /// The model to call.
            pub fn model(mut self, model: impl Into<String>) -> Self {
                self.client.set_model(model.into());
                self
            }

            /// An extra header on every request (ignored if the name or value is not
            /// valid HTTP). A header named like a credential (`authorization`, `…-key`,
            /// `…token…`) is kept out of `Debug` and errors like the key.
            pub fn header(mut self, name: &str, value: &str) -> Self {
                self.client.add_header(name, value);
                self
            }

            /// Use this HTTP client (proxies, custom TLS). The
            /// [timeouts](crate::timeouts) of this client still apply.
            pub fn http_client(mut self, client: reqwest::Client) -> Self {
                self.client.transport.client = client;
                self
            }

            /// Limit on a whole non-streamed call (default
            /// [`DEFAULT_REQUEST_TIMEOUT`](crate::timeouts::DEFAULT_REQUEST_TIMEOUT), 60 s;
            /// [`COMPATIBLE_REQUEST_TIMEOUT`](crate::timeouts::COMPATIBLE_REQUEST_TIMEOUT),
            /// 300 s, for [`OpenAiCompatible`](crate::OpenAiCompatible));
            /// past it the call fails with
            /// [`ProviderError::Timeout`](agent_core::error::ProviderError::Timeout).
            pub fn request_timeout(mut self, limit: std::time::Duration) -> Self {
                self.client.transport.timeouts.request = limit;
                self
            }

            /// Limit from a streamed call to its first event (default
            /// [`DEFAULT_FIRST_BYTE_TIMEOUT`](crate::timeouts::DEFAULT_FIRST_BYTE_TIMEOUT), 30 s).
            pub fn first_byte_timeout(mut self, limit: std::time::Duration) -> Self {
                self.client.transport.timeouts.first_byte = limit;
                self
            }

            /// Limit between two events of a stream (default
            /// [`DEFAULT_STREAM_IDLE_TIMEOUT`](crate::timeouts::DEFAULT_STREAM_IDLE_TIMEOUT), 60 s).
            pub fn stream_idle_timeout(mut self, limit: std::time::Duration) -> Self {
                self.client.transport.timeouts.idle = limit;
                self
            }

            /// Temperature sent when the request sets none.
            pub fn temperature_default(mut self, t: f32) -> Self {
                self.client.defaults.temperature = Some(t);
                self
            }

            /// Token limit sent when the request sets none.
            pub fn max_tokens_default(mut self, n: u32) -> Self {
                self.client.defaults.max_tokens = Some(n);
                self
            }

            /// The model's profile ([`agent_core::policy`]): `Small` turns on the
            /// behaviours that exist for small models (local 1-3 B models); the
            /// default is `Capable`.
            pub fn profile(mut self, profile: ::agent_core::policy::ModelProfile) -> Self {
                self.client.defaults.profile = profile;
                self
            }

            /// The name of the model this provider calls (as sent in requests).
            pub fn model_name(&self) -> &str {
                self.client.model()
            }

            /// One call, streamed as deltas: text, tool-call starts and argument
            /// fragments, then the assembled answer.
            pub fn stream_deltas<'a>(
                &'a self,
                req: &'a ::agent_core::provider::ModelRequest,
            ) -> ::futures::stream::BoxStream<
                'a,
                Result<$crate::stream::StreamDelta, ::agent_core::error::ProviderError>,
            > {
                self.client.stream(req)
            }
        }

        impl ::std::fmt::Debug for $client {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Debug::fmt(&self.client, f)
            }
        }

        impl $crate::WithModel for $client {
            fn with_model(&self, model: &str) -> Self {
                self.clone().model(model)
            }
            fn model_id(&self) -> &str {
                self.client.model()
            }
        }

        #[::async_trait::async_trait]
        impl ::agent_core::provider::Provider for $client {
            fn name(&self) -> &str {
                self.client.name()
            }

            async fn generate(
                &self,
                req: &::agent_core::provider::ModelRequest,
            ) -> Result<::agent_core::provider::ModelResponse, ::agent_core::error::ProviderError>
            {
                self.client.complete(req).await
            }

            fn generate_stream<'a>(
                &'a self,
                req: &'a ::agent_core::provider::ModelRequest,
            ) -> ::futures::stream::BoxStream<
                'a,
                Result<::agent_core::provider::StreamChunk, ::agent_core::error::ProviderError>,
            > {
                $crate::stream::into_chunks(self.client.stream(req))
            }

            fn wire_body(&self, req: &::agent_core::provider::ModelRequest) -> Option<Vec<u8>> {
                self.client.body(req, false).ok()
            }

            fn server(&self) -> Option<(&str, u16)> {
                self.client.server()
            }

            fn profile(&self) -> ::agent_core::policy::ModelProfile {
                self.client.defaults.profile
            }
        }
    };
}

pub(crate) use client_api;
