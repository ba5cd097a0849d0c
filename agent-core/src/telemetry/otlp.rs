//! The OTLP/HTTP exporter (feature `otel`): the engine's spans as OpenTelemetry spans,
//! through `tracing-opentelemetry`, batched and sent as protobuf to a collector.

use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use http::{Request, Response, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use opentelemetry::InstrumentationScope;
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_http::{HttpClient, HttpError};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Span;
use tracing::Subscriber;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;

use super::CaptureContent;

/// The path of the traces signal under an OTLP/HTTP endpoint.
const TRACES_PATH: &str = "/v1/traces";
/// The most of a collector's answer that is read (answers are a few bytes).
const MAX_RESPONSE_BYTES: usize = 1 << 20;

/// Why telemetry could not be set up, flushed or shut down.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// The endpoint is not a URL the exporter can send to.
    #[error(
        "invalid OTLP endpoint `{endpoint}`: {reason}; give the collector's OTLP/HTTP address, such as http://127.0.0.1:4318"
    )]
    Endpoint {
        /// The endpoint as given.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The thread that sends the batches could not be started.
    #[error("could not start the OTLP export thread: {0}; the process may be out of threads")]
    Runtime(String),
    /// The OpenTelemetry SDK refused the exporter's configuration.
    #[error("could not build the OTLP exporter: {0}")]
    Exporter(String),
    /// [`Telemetry::init`] found a global `tracing` subscriber already set.
    #[error(
        "a global tracing subscriber is already set; add `Telemetry::layer()` to that subscriber instead of calling `init`"
    )]
    SubscriberAlreadySet,
    /// Flushing or shutting down did not get the spans to the collector.
    #[error(
        "sending spans to the OTLP endpoint {endpoint} failed: {message}; check that a collector listens there"
    )]
    Export {
        /// The traces URL spans were sent to.
        endpoint: String,
        /// The SDK's message.
        message: String,
    },
}

/// How to export: built by [`Telemetry::otlp`], finished by [`TelemetryBuilder::build`].
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct TelemetryBuilder {
    endpoint: String,
    service_name: String,
    capture_content: bool,
    timeout: Duration,
}

impl TelemetryBuilder {
    /// The `service.name` of the exported resource (default `agent`).
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = name.into();
        self
    }

    /// Record message contents (system prompt, messages, answers, tool arguments and
    /// results) on the spans this exporter's layer sees. Off by default.
    pub fn capture_content(mut self, on: bool) -> Self {
        self.capture_content = on;
        self
    }

    /// The time limit of one export request (default 10 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Start the exporter: a batch span processor and the thread that sends its
    /// batches. Nothing is traced until its [`layer`](Telemetry::layer) is in a
    /// subscriber (or [`init`](Telemetry::init) installs one).
    pub fn build(self) -> Result<Telemetry, TelemetryError> {
        let traces_url = traces_url(&self.endpoint)?;
        let worker = Worker::start()?;
        let client = HyperHttp {
            client: Client::builder(TokioExecutor::new()).build_http(),
            handle: worker.handle.clone(),
            timeout: self.timeout,
        };
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(traces_url.clone())
            .with_timeout(self.timeout)
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        let resource = Resource::builder()
            .with_service_name(self.service_name)
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        Ok(Telemetry {
            provider,
            capture_content: self.capture_content,
            traces_url,
            worker: Mutex::new(Some(worker)),
        })
    }
}

/// Spans exported over OTLP/HTTP (protobuf). Hold it while the process traces: dropping
/// it (or [`shutdown`](Self::shutdown)) sends what is buffered and stops the export.
///
/// Spans of turns, model calls and tool calls follow the GenAI semantic conventions
/// (see [the module](crate::telemetry)); the layer passes spans and events at `INFO`
/// and above. Only `http://` endpoints: run a collector (or agent) next to the process
/// and let it forward over TLS.
///
/// ```no_run
/// use agent_core::telemetry::Telemetry;
/// use tracing_subscriber::layer::SubscriberExt;
///
/// # fn main() -> Result<(), agent_core::telemetry::TelemetryError> {
/// let telemetry = Telemetry::otlp("http://127.0.0.1:4318")
///     .service_name("concierge")
///     .build()?;
/// // Next to other layers (logs to stderr, say) in the application's subscriber:
/// let subscriber = tracing_subscriber::registry().with(telemetry.layer());
/// tracing::subscriber::set_global_default(subscriber).ok();
/// // ... run agents ...
/// telemetry.shutdown()?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Telemetry {
    provider: SdkTracerProvider,
    capture_content: bool,
    traces_url: String,
    worker: Mutex<Option<Worker>>,
}

impl Telemetry {
    /// Export to the collector at `endpoint`, its OTLP/HTTP base address (such as
    /// `http://127.0.0.1:4318`; `/v1/traces` is added unless the URL ends with it).
    pub fn otlp(endpoint: impl Into<String>) -> TelemetryBuilder {
        TelemetryBuilder {
            endpoint: endpoint.into(),
            service_name: "agent".into(),
            capture_content: false,
            timeout: Duration::from_secs(10),
        }
    }

    /// The `tracing` layer that turns spans into OpenTelemetry spans for this exporter.
    /// Spans and events below `INFO` are left out (the engine's `TRACE` events hold
    /// prompts).
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
    {
        let scope = InstrumentationScope::builder("agent-core")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        let tracer = self.provider.tracer_with_scope(scope);
        let otel = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(LevelFilter::INFO);
        // Not an `Option` layer: a `None` layer's level hint (`OFF`) would turn every
        // span of the subscriber off.
        otel.and_then(CaptureContent(self.capture_content))
    }

    /// Make a subscriber of [`layer`](Self::layer) alone the process's global default.
    /// Fails when the process already has one: add the layer to that one instead.
    pub fn init(self) -> Result<Self, TelemetryError> {
        let subscriber = tracing_subscriber::registry().with(self.layer());
        tracing::subscriber::set_global_default(subscriber)
            .map_err(|_| TelemetryError::SubscriberAlreadySet)?;
        Ok(self)
    }

    /// The SDK's tracer provider, for layers or tracers built by hand.
    pub fn tracer_provider(&self) -> &SdkTracerProvider {
        &self.provider
    }

    /// Send every finished span now. Blocks the calling thread until the collector has
    /// answered or the export timed out.
    pub fn flush(&self) -> Result<(), TelemetryError> {
        self.provider
            .force_flush()
            .map_err(|e| self.export_error(e))
    }

    /// Send every finished span and stop exporting. Blocks the calling thread until the
    /// collector has answered or the export timed out. Spans that end later are
    /// dropped. Calling it again does nothing.
    pub fn shutdown(&self) -> Result<(), TelemetryError> {
        let Some(worker) = self.take_worker() else {
            return Ok(());
        };
        let result = match self.provider.shutdown() {
            Ok(()) | Err(opentelemetry_sdk::error::OTelSdkError::AlreadyShutdown) => Ok(()),
            Err(e) => Err(self.export_error(e)),
        };
        worker.stop();
        result
    }

    fn take_worker(&self) -> Option<Worker> {
        match self.worker.lock() {
            Ok(mut w) => w.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        }
    }

    fn export_error(&self, e: opentelemetry_sdk::error::OTelSdkError) -> TelemetryError {
        TelemetryError::Export {
            endpoint: self.traces_url.clone(),
            message: e.to_string(),
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            // The subscriber may be gone; stderr is the last place that sees it.
            eprintln!("agent-core telemetry: {e}");
        }
    }
}

/// Install a global subscriber that exports spans to the collector at `endpoint` (its
/// OTLP/HTTP base address, such as `http://127.0.0.1:4318`) as `service_name`, with
/// message contents left out. Keep the returned value while the process traces.
pub fn init_otlp(
    endpoint: impl Into<String>,
    service_name: impl Into<String>,
) -> Result<Telemetry, TelemetryError> {
    Telemetry::otlp(endpoint)
        .service_name(service_name)
        .build()?
        .init()
}

/// The marker does nothing but be found: [`super::capture_content`] looks for it in the
/// current subscriber.
impl<S: Subscriber> Layer<S> for CaptureContent {}

/// Set a string-array attribute on the span's OpenTelemetry span; `false` when no
/// OpenTelemetry layer sees the span.
pub(super) fn set_string_array(span: &Span, key: &'static str, values: &[&'static str]) -> bool {
    if !span.context().span().span_context().is_valid() {
        return false;
    }
    let values = values
        .iter()
        .map(|v| opentelemetry::StringValue::from(*v))
        .collect();
    span.set_attribute(
        key,
        opentelemetry::Value::Array(opentelemetry::Array::String(values)),
    );
    true
}

/// `endpoint` with the traces path, checked.
fn traces_url(endpoint: &str) -> Result<String, TelemetryError> {
    let bad = |reason: &str| TelemetryError::Endpoint {
        endpoint: endpoint.to_owned(),
        reason: reason.to_owned(),
    };
    let uri: Uri = endpoint.parse().map_err(|e| bad(&format!("{e}")))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some("https") => {
            return Err(bad(
                "https is not built in; send to a local collector over http and let it forward over TLS",
            ));
        }
        _ => return Err(bad("it needs the http:// scheme")),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(bad("it has no host"));
    }
    let base = endpoint.trim_end_matches('/');
    Ok(if base.ends_with(TRACES_PATH) {
        base.to_owned()
    } else {
        format!("{base}{TRACES_PATH}")
    })
}

/// A single-threaded Tokio runtime on its own thread, where export requests run: the
/// SDK's batch processor calls the exporter from a plain thread, and the application's
/// runtime (if any) is no place to block on.
#[derive(Debug)]
struct Worker {
    handle: tokio::runtime::Handle,
    stop: tokio::sync::oneshot::Sender<()>,
}

impl Worker {
    fn start() -> Result<Self, TelemetryError> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("agent-otel-export".into())
            .spawn(move || {
                // The HTTP stack's own `tracing` events stay out of the traces.
                let _quiet = tracing::dispatcher::set_default(&tracing::Dispatch::none());
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.to_string()));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(runtime.handle().clone()));
                // Runs the spawned requests until told to stop (or the sender is gone).
                let _ = runtime.block_on(stopped);
            })
            .map_err(|e| TelemetryError::Runtime(e.to_string()))?;
        let handle = ready_rx
            .recv()
            .map_err(|e| TelemetryError::Runtime(e.to_string()))?
            .map_err(TelemetryError::Runtime)?;
        Ok(Self { handle, stop })
    }

    fn stop(self) {
        let _ = self.stop.send(());
    }
}

/// OTLP's HTTP client: hyper (HTTP/1.1, no TLS) on the worker's runtime.
#[derive(Debug, Clone)]
struct HyperHttp {
    client: Client<HttpConnector, Full<Bytes>>,
    handle: tokio::runtime::Handle,
    timeout: Duration,
}

#[async_trait]
impl HttpClient for HyperHttp {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let timeout = self.timeout;
        let task = self.handle.spawn(async move {
            let exchange = async {
                let (parts, body) = request.into_parts();
                let response = client
                    .request(Request::from_parts(parts, Full::new(body)))
                    .await?;
                let (parts, body) = response.into_parts();
                let body = Limited::new(body, MAX_RESPONSE_BYTES)
                    .collect()
                    .await?
                    .to_bytes();
                Ok::<_, HttpError>(Response::from_parts(parts, body))
            };
            match tokio::time::timeout(timeout, exchange).await {
                Ok(r) => r,
                Err(_) => Err(format!("no answer within {timeout:?}").into()),
            }
        });
        match task.await {
            Ok(r) => r,
            Err(e) => Err(format!("the export thread stopped: {e}").into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_get_the_traces_path_once() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318").ok().as_deref(),
            Some("http://127.0.0.1:4318/v1/traces")
        );
        assert_eq!(
            traces_url("http://collector:4318/").ok().as_deref(),
            Some("http://collector:4318/v1/traces")
        );
        assert_eq!(
            traces_url("http://collector:4318/v1/traces")
                .ok()
                .as_deref(),
            Some("http://collector:4318/v1/traces")
        );
    }

    #[test]
    fn endpoints_without_http_are_refused_with_the_reason() {
        for bad in ["https://collector:4318", "collector:4318", "not a url", ""] {
            match traces_url(bad) {
                Err(TelemetryError::Endpoint { endpoint, .. }) => assert_eq!(endpoint, bad),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }
}
