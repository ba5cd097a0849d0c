//! The OTLP/HTTP exporter (feature `otel`): the engine's spans as OpenTelemetry spans,
//! through `tracing-opentelemetry`, batched and sent as protobuf to a collector, and
//! the GenAI client metrics beside them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use http::{HeaderName, HeaderValue, Request, Response, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use opentelemetry::metrics::{Histogram, MeterProvider as _};
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry::{Context, InstrumentationScope, Key, KeyValue};
use opentelemetry_http::{HttpClient, HttpError};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use opentelemetry_sdk::trace::{
    BatchSpanProcessor, Sampler, SdkTracerProvider, SpanData, SpanExporter, SpanProcessor,
};
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
/// The path of the metrics signal under an OTLP/HTTP endpoint.
const METRICS_PATH: &str = "/v1/metrics";
/// The OTLP/HTTP endpoint when neither the code nor the environment names one.
const DEFAULT_ENDPOINT: &str = "http://localhost:4318";
/// The `service.name` when neither the code nor the environment names one.
const DEFAULT_SERVICE_NAME: &str = "agent";
/// The most of a collector's answer that is read (answers are a few bytes).
const MAX_RESPONSE_BYTES: usize = 1 << 20;
/// The target of the exporter's own warnings.
const TARGET: &str = "agent_core::telemetry";

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
    /// Spans or metrics could not be sent: the collector refused them, answered with an
    /// error status, did not answer, or could not be reached.
    #[error(
        "sending telemetry to the OTLP endpoint {endpoint} failed: {message}; check that a collector listens there"
    )]
    Export {
        /// The URL the failed request went to.
        endpoint: String,
        /// The cause, in words (`connection refused`, `HTTP 404 Not Found`, …).
        message: String,
    },
}

/// How to export: built by [`Telemetry::otlp`] or [`Telemetry::from_env`], finished by
/// [`TelemetryBuilder::build`]. What is set here wins over the `OTEL_*` environment
/// variables (see [the module](crate::telemetry)).
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct TelemetryBuilder {
    endpoint: Option<String>,
    service_name: Option<String>,
    headers: Vec<(String, String)>,
    capture_content: bool,
    timeout: Duration,
    metrics: bool,
    metrics_interval: Duration,
}

impl TelemetryBuilder {
    /// The collector's OTLP/HTTP base address (such as `http://127.0.0.1:4318`); wins
    /// over `OTEL_EXPORTER_OTLP_ENDPOINT` and the per-signal variables. Traces go to
    /// its `/v1/traces` (added unless the URL ends with it), metrics to its
    /// `/v1/metrics`.
    pub fn endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }

    /// The `service.name` of the exported resource; wins over `OTEL_SERVICE_NAME`
    /// (default: that variable, else `service.name` in `OTEL_RESOURCE_ATTRIBUTES`, else
    /// `agent`).
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into());
        self
    }

    /// A header on every export request (an API key of a hosted collector, say); wins
    /// over a header of the same name in `OTEL_EXPORTER_OTLP_HEADERS`. A name or value
    /// that is not valid HTTP makes [`build`](Self::build) fail.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
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

    /// Export the GenAI client metrics (token usage, operation and turn durations) next
    /// to the spans. On by default.
    pub fn metrics(mut self, on: bool) -> Self {
        self.metrics = on;
        self
    }

    /// How often metrics are sent (default 60 s); [`flush`](Telemetry::flush) and
    /// [`shutdown`](Telemetry::shutdown) send them at once.
    pub fn metrics_interval(mut self, interval: Duration) -> Self {
        self.metrics_interval = interval;
        self
    }

    /// Start the exporter: a batch span processor, a periodic metric reader and the
    /// thread that sends their requests. Nothing is traced until its
    /// [`layer`](Telemetry::layer) is in a subscriber (or [`init`](Telemetry::init)
    /// installs one). With `OTEL_SDK_DISABLED=true` the exporter is a no-op: nothing is
    /// sent and no thread is started.
    pub fn build(self) -> Result<Telemetry, TelemetryError> {
        self.build_with(&|name| std::env::var(name).ok())
    }

    fn build_with(self, env: &dyn Fn(&str) -> Option<String>) -> Result<Telemetry, TelemetryError> {
        let settings = Settings::resolve(&self, env)?;
        let Some(settings) = settings else {
            return Ok(Telemetry::disabled(self.capture_content));
        };
        let headers = self
            .headers
            .iter()
            .map(|(n, v)| {
                let bad =
                    |reason: String| TelemetryError::Exporter(format!("header `{n}`: {reason}"));
                Ok((
                    HeaderName::try_from(n.as_str()).map_err(|e| bad(e.to_string()))?,
                    HeaderValue::try_from(v.as_str()).map_err(|e| bad(e.to_string()))?,
                ))
            })
            .collect::<Result<Vec<_>, TelemetryError>>()?;
        let worker = Worker::start()?;
        let status = Arc::new(ExportStatus::default());
        let client = HyperHttp {
            client: Client::builder(TokioExecutor::new()).build_http(),
            handle: worker.handle.clone(),
            timeout: self.timeout,
            headers: Arc::new(headers),
            status: status.clone(),
        };
        let resource = resource(settings.service_name);
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client.clone())
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(settings.traces_url.clone())
            .with_timeout(self.timeout)
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        let exporter = Watched {
            inner: exporter,
            url: settings.traces_url.clone(),
            status: status.clone(),
        };
        let provider = SdkTracerProvider::builder()
            .with_span_processor(RelativePaths(BatchSpanProcessor::builder(exporter).build()))
            .with_resource(resource.clone())
            .build();
        let meters = if self.metrics {
            let exporter = opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_http_client(client)
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(settings.metrics_url.clone())
                .with_timeout(self.timeout)
                .build()
                .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
            let exporter = Watched {
                inner: exporter,
                url: settings.metrics_url,
                status: status.clone(),
            };
            let reader = PeriodicReader::builder(exporter)
                .with_interval(self.metrics_interval)
                .build();
            Some(
                SdkMeterProvider::builder()
                    .with_reader(reader)
                    .with_resource(resource)
                    .build(),
            )
        } else {
            None
        };
        let instruments = meters.as_ref().map(Instruments::new);
        Ok(Telemetry {
            provider,
            meters,
            instruments,
            capture_content: self.capture_content,
            traces_url: settings.traces_url,
            status,
            worker: Mutex::new(Some(worker)),
        })
    }
}

/// Where to send and as whom, from the builder and the environment.
#[derive(Debug, PartialEq)]
struct Settings {
    traces_url: String,
    metrics_url: String,
    /// `None`: the SDK's resource detectors decide (`OTEL_RESOURCE_ATTRIBUTES`).
    service_name: Option<String>,
}

impl Settings {
    /// `None` when `OTEL_SDK_DISABLED` is `true`.
    fn resolve(
        b: &TelemetryBuilder,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, TelemetryError> {
        let var = |name: &str| {
            env(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let signal = |specific: &str, path: &str| -> Result<String, TelemetryError> {
            if let Some(e) = &b.endpoint {
                return signal_url(e, path);
            }
            if let Some(e) = var(specific) {
                // The per-signal variable is the full URL, as the specification says.
                check_http(&e)?;
                return Ok(e);
            }
            signal_url(
                var("OTEL_EXPORTER_OTLP_ENDPOINT")
                    .as_deref()
                    .unwrap_or(DEFAULT_ENDPOINT),
                path,
            )
        };
        Ok(Some(Self {
            traces_url: signal("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", TRACES_PATH)?,
            metrics_url: signal("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", METRICS_PATH)?,
            service_name: b.service_name.clone().or_else(|| var("OTEL_SERVICE_NAME")),
        }))
    }
}

/// The resource of every span and metric: the SDK's (which reads
/// `OTEL_RESOURCE_ATTRIBUTES`) with `service.name` from the settings, else `agent`
/// where the SDK knows none.
fn resource(service_name: Option<String>) -> Resource {
    if let Some(name) = service_name {
        return Resource::builder().with_service_name(name).build();
    }
    let detected = Resource::builder().build();
    let unknown = detected
        .get(&Key::new("service.name"))
        .is_none_or(|v| v.as_str().starts_with("unknown_service"));
    if unknown {
        Resource::builder()
            .with_service_name(DEFAULT_SERVICE_NAME)
            .build()
    } else {
        detected
    }
}

/// Spans and GenAI metrics exported over OTLP/HTTP (protobuf). Hold it while the
/// process traces: dropping it (or [`shutdown`](Self::shutdown)) sends what is buffered
/// and stops the export.
///
/// Spans of turns, model calls and tool calls follow the GenAI semantic conventions
/// (see [the module](crate::telemetry)); the layer passes spans and events at `INFO`
/// and above. Only `http://` endpoints: run a collector (or agent) next to the process
/// and let it forward over TLS.
///
/// A request the collector does not take (it cannot be reached, answers with an error
/// status, or not in time) is reported once per kind of failure as a `WARN` event of
/// the target `agent_core::telemetry` that names the URL and the cause; the next
/// [`flush`](Self::flush) or [`shutdown`](Self::shutdown) returns
/// [`TelemetryError::Export`].
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
    meters: Option<SdkMeterProvider>,
    instruments: Option<Instruments>,
    capture_content: bool,
    traces_url: String,
    status: Arc<ExportStatus>,
    worker: Mutex<Option<Worker>>,
}

impl Telemetry {
    /// Export to the collector at `endpoint`, its OTLP/HTTP base address (such as
    /// `http://127.0.0.1:4318`; `/v1/traces` is added unless the URL ends with it). The
    /// endpoint given here wins over the `OTEL_EXPORTER_OTLP_*ENDPOINT` variables.
    pub fn otlp(endpoint: impl Into<String>) -> TelemetryBuilder {
        Self::from_env().endpoint(endpoint)
    }

    /// Export where the standard environment variables say: the endpoint from
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`
    /// (full URLs) or `OTEL_EXPORTER_OTLP_ENDPOINT` (a base address), else
    /// `http://localhost:4318`; see [the module](crate::telemetry) for the rest.
    pub fn from_env() -> TelemetryBuilder {
        TelemetryBuilder {
            endpoint: None,
            service_name: None,
            headers: Vec::new(),
            capture_content: false,
            timeout: Duration::from_secs(10),
            metrics: true,
            metrics_interval: Duration::from_secs(60),
        }
    }

    /// A telemetry that sends nothing (`OTEL_SDK_DISABLED=true`).
    fn disabled(capture_content: bool) -> Self {
        Self {
            provider: SdkTracerProvider::builder()
                .with_sampler(Sampler::AlwaysOff)
                .build(),
            meters: None,
            instruments: None,
            capture_content,
            traces_url: String::new(),
            status: Arc::new(ExportStatus::default()),
            worker: Mutex::new(None),
        }
    }

    /// The `tracing` layer that turns spans into OpenTelemetry spans for this exporter
    /// and records the GenAI metrics of the turns and model calls it sees. Spans and
    /// events below `INFO` are left out (the engine's `TRACE` events hold prompts).
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
    {
        let tracer = self.provider.tracer_with_scope(scope());
        let otel = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(LevelFilter::INFO);
        // Not `Option` layers: a `None` layer's level hint (`OFF`) would turn every
        // span of the subscriber off.
        otel.and_then(CaptureContent(self.capture_content))
            .and_then(MetricsLayer(self.instruments.clone()))
    }

    /// Make a subscriber of [`layer`](Self::layer) the process's global default, with
    /// the exporter's own warnings (failed exports) printed to stderr. Fails when the
    /// process already has one: add the layer to that one instead.
    pub fn init(self) -> Result<Self, TelemetryError> {
        let warnings = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(tracing_subscriber::filter::filter_fn(|m| {
                m.target() == TARGET && *m.level() <= tracing::Level::WARN
            }));
        let subscriber = tracing_subscriber::registry()
            .with(self.layer())
            .with(warnings);
        tracing::subscriber::set_global_default(subscriber)
            .map_err(|_| TelemetryError::SubscriberAlreadySet)?;
        Ok(self)
    }

    /// The SDK's tracer provider, for layers or tracers built by hand.
    pub fn tracer_provider(&self) -> &SdkTracerProvider {
        &self.provider
    }

    /// The SDK's meter provider, for instruments of the application's own (`None` when
    /// metrics are off).
    pub fn meter_provider(&self) -> Option<&SdkMeterProvider> {
        self.meters.as_ref()
    }

    /// Send every finished span and the metrics now. Blocks the calling thread until
    /// the collector has answered or the export timed out. Fails when anything could
    /// not be sent since the last flush (now or in the background).
    pub fn flush(&self) -> Result<(), TelemetryError> {
        let traces = self.provider.force_flush();
        let metrics = self
            .meters
            .as_ref()
            .map_or(Ok(()), SdkMeterProvider::force_flush);
        self.outcome(traces.and(metrics))
    }

    /// Send every finished span and the metrics, and stop exporting. Blocks the calling
    /// thread until the collector has answered or the export timed out. Spans that end
    /// later are dropped. Fails when anything could not be sent since the last flush.
    /// Calling it again does nothing.
    pub fn shutdown(&self) -> Result<(), TelemetryError> {
        let Some(worker) = self.take_worker() else {
            return Ok(());
        };
        let traces = self.provider.shutdown();
        let metrics = self
            .meters
            .as_ref()
            .map_or(Ok(()), SdkMeterProvider::shutdown);
        let result = self.outcome(traces.and(metrics));
        worker.stop();
        result
    }

    /// The error of a flush or shutdown: the first failed export since the last one
    /// (it names its URL and cause), else what the SDK said.
    fn outcome(&self, sdk: OTelSdkResult) -> Result<(), TelemetryError> {
        if let Some((endpoint, message)) = self.status.take_failure() {
            return Err(TelemetryError::Export { endpoint, message });
        }
        match sdk {
            Ok(()) | Err(opentelemetry_sdk::error::OTelSdkError::AlreadyShutdown) => Ok(()),
            Err(e) => Err(TelemetryError::Export {
                endpoint: self.traces_url.clone(),
                message: e.to_string(),
            }),
        }
    }

    fn take_worker(&self) -> Option<Worker> {
        match self.worker.lock() {
            Ok(mut w) => w.take(),
            Err(poisoned) => poisoned.into_inner().take(),
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

/// Install a global subscriber that exports spans and metrics to the collector at
/// `endpoint` (its OTLP/HTTP base address, such as `http://127.0.0.1:4318`) as
/// `service_name`, with message contents left out. Keep the returned value while the
/// process traces. [`Telemetry::from_env`] reads both from the environment instead.
pub fn init_otlp(
    endpoint: impl Into<String>,
    service_name: impl Into<String>,
) -> Result<Telemetry, TelemetryError> {
    Telemetry::otlp(endpoint)
        .service_name(service_name)
        .build()?
        .init()
}

fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("agent-core")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
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

/// `endpoint` with the signal's path (`/v1/traces`, `/v1/metrics`), checked. A base
/// address that already ends with a signal's path stands for its collector.
fn signal_url(endpoint: &str, path: &str) -> Result<String, TelemetryError> {
    check_http(endpoint)?;
    let mut base = endpoint.trim_end_matches('/');
    for p in [TRACES_PATH, METRICS_PATH] {
        base = base.strip_suffix(p).unwrap_or(base);
    }
    Ok(format!("{base}{path}"))
}

/// An `http://` URL with a host.
fn check_http(endpoint: &str) -> Result<(), TelemetryError> {
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
    Ok(())
}

/// Passes finished spans on with `code.file.path` made relative: `tracing` records the
/// path the compiler was given, which for a dependency is where it was built (an
/// absolute path of the build machine). Kept from the crate's folder on
/// (`agent-core/src/agent/turn.rs`).
#[derive(Debug)]
struct RelativePaths<P>(P);

impl<P: SpanProcessor> SpanProcessor for RelativePaths<P> {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &Context) {
        self.0.on_start(span, cx);
    }

    fn on_end(&self, mut span: SpanData) {
        relative_paths(&mut span.attributes);
        for event in &mut span.events.events {
            relative_paths(&mut event.attributes);
        }
        self.0.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.0.set_resource(resource);
    }
}

fn relative_paths(attributes: &mut [KeyValue]) {
    for kv in attributes {
        if kv.key.as_str() == "code.file.path"
            && let opentelemetry::Value::String(path) = &kv.value
            && let Some(relative) = relative_path(path.as_str())
        {
            kv.value = opentelemetry::Value::String(relative.to_owned().into());
        }
    }
}

/// The part of an absolute source path from its crate's folder on: the folder before
/// the last `src`, `tests`, `examples` or `benches`, else the file name. `None` for a
/// relative path (already relative to its workspace).
fn relative_path(path: &str) -> Option<&str> {
    let absolute = path.starts_with('/')
        || path.starts_with('\\')
        || path.as_bytes().get(1..3) == Some(b":\\")
        || path.as_bytes().get(1..3) == Some(b":/");
    if !absolute {
        return None;
    }
    // Each component with where it starts.
    let mut parts: Vec<(usize, &str)> = Vec::new();
    let mut start = 0;
    for (i, c) in path.char_indices() {
        if c == '/' || c == '\\' {
            parts.push((start, path.get(start..i).unwrap_or("")));
            start = i + 1;
        }
    }
    let file = start;
    let folders = parts
        .iter()
        .rposition(|(_, name)| matches!(*name, "src" | "tests" | "examples" | "benches"));
    let start = match folders
        .and_then(|i| i.checked_sub(1))
        .and_then(|i| parts.get(i))
    {
        Some((s, name)) if !name.is_empty() => *s,
        _ => file,
    };
    path.get(start..)
}

/// What went wrong with exports, for one warning per kind of failure and for the next
/// flush.
#[derive(Debug, Default)]
struct ExportStatus(Mutex<StatusInner>);

#[derive(Debug, Default)]
struct StatusInner {
    /// The cause of the last failed request to each URL (the exporter may try again).
    last: Vec<(String, Failure)>,
    /// The kinds of failure already reported.
    reported: Vec<String>,
    /// The first lost export since the last flush: URL, cause, lost exports.
    pending: Option<(String, String, usize)>,
}

impl ExportStatus {
    fn lock(&self) -> std::sync::MutexGuard<'_, StatusInner> {
        match self.0.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// A request to `url` failed (the exporter may retry it).
    fn request_failed(&self, url: &str, failure: Failure) {
        let mut inner = self.lock();
        inner.last.retain(|(u, _)| u != url);
        inner.last.push((url.to_owned(), failure));
    }

    /// An export to `url` ended: sent, or lost (after the exporter's retries) with
    /// the SDK's error. A loss is reported here, on the SDK's export thread, whose
    /// subscriber is the application's global one.
    fn settled(&self, url: &str, result: &OTelSdkResult) {
        let mut inner = self.lock();
        let last = inner
            .last
            .iter()
            .position(|(u, _)| u == url)
            .map(|i| inner.last.swap_remove(i).1);
        let Err(error) = result else {
            return;
        };
        let failure = last.unwrap_or_else(|| Failure {
            kind: "other".into(),
            words: error.to_string(),
        });
        match &mut inner.pending {
            Some((_, _, n)) => *n += 1,
            None => inner.pending = Some((url.to_owned(), failure.words.clone(), 1)),
        }
        if inner.reported.contains(&failure.kind) {
            return;
        }
        inner.reported.push(failure.kind);
        drop(inner);
        tracing::warn!(
            target: TARGET,
            endpoint = %url,
            cause = %failure.words,
            "OpenTelemetry export to {url} failed: {}; what it carried is lost (this failure is reported once; flush and shutdown return it)",
            failure.words,
        );
    }

    fn take_failure(&self) -> Option<(String, String)> {
        self.lock().pending.take().map(|(url, words, n)| {
            let words = if n > 1 {
                format!("{words} ({n} exports failed)")
            } else {
                words
            };
            (url, words)
        })
    }
}

/// An exporter whose outcomes go to the [`ExportStatus`].
#[derive(Debug)]
struct Watched<E> {
    inner: E,
    url: String,
    status: Arc<ExportStatus>,
}

impl<E: SpanExporter> SpanExporter for Watched<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        self.status.settled(&self.url, &result);
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

impl<E: PushMetricExporter> PushMetricExporter for Watched<E> {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let result = self.inner.export(metrics).await;
        self.status.settled(&self.url, &result);
        result
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}

/// A failed export request: its kind (one warning each) and its cause in words.
#[derive(Debug)]
struct Failure {
    kind: String,
    words: String,
}

impl Failure {
    fn of_status(status: http::StatusCode) -> Self {
        let words = match status.canonical_reason() {
            Some(reason) => format!("HTTP {} {reason}", status.as_u16()),
            None => format!("HTTP {}", status.as_u16()),
        };
        Self {
            kind: format!("http {}", status.as_u16()),
            words,
        }
    }

    /// The cause of a request that got no answer, from the innermost I/O error.
    fn of_error(error: &(dyn std::error::Error + 'static)) -> Self {
        let mut source = Some(error);
        while let Some(e) = source {
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                use std::io::ErrorKind as K;
                let (kind, words) = match io.kind() {
                    K::ConnectionRefused => ("refused", "connection refused".to_owned()),
                    K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => {
                        ("reset", format!("connection reset ({io})"))
                    }
                    K::TimedOut => ("timeout", "timed out".to_owned()),
                    _ => ("io", format!("could not connect: {io}")),
                };
                return Self {
                    kind: kind.into(),
                    words,
                };
            }
            if let Some(t) = e.downcast_ref::<NoAnswer>() {
                return Self {
                    kind: "timeout".into(),
                    words: t.to_string(),
                };
            }
            source = e.source();
        }
        Self {
            kind: "other".into(),
            words: error.to_string(),
        }
    }
}

/// No answer within the export timeout.
#[derive(Debug, thiserror::Error)]
#[error("no answer within {0:?}")]
struct NoAnswer(Duration);

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

/// OTLP's HTTP client: hyper (HTTP/1.1, no TLS) on the worker's runtime. Adds the
/// builder's headers and notes the cause of every failed request.
#[derive(Debug, Clone)]
struct HyperHttp {
    client: Client<HttpConnector, Full<Bytes>>,
    handle: tokio::runtime::Handle,
    timeout: Duration,
    headers: Arc<Vec<(HeaderName, HeaderValue)>>,
    status: Arc<ExportStatus>,
}

#[async_trait]
impl HttpClient for HyperHttp {
    async fn send_bytes(&self, mut request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let timeout = self.timeout;
        let url = request.uri().to_string();
        for (name, value) in self.headers.iter() {
            request.headers_mut().insert(name.clone(), value.clone());
        }
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
                Err(_) => Err(NoAnswer(timeout).into()),
            }
        });
        let result = match task.await {
            Ok(r) => r,
            Err(e) => Err(format!("the export thread stopped: {e}").into()),
        };
        // The cause in words, for when the exporter gives up on the export.
        match &result {
            Ok(response) if !response.status().is_success() => {
                self.status
                    .request_failed(&url, Failure::of_status(response.status()));
            }
            Ok(_) => {}
            Err(e) => self
                .status
                .request_failed(&url, Failure::of_error(e.as_ref())),
        }
        result
    }
}

/// The GenAI client metrics (and the turn duration), recorded by the layer's marker.
#[derive(Debug, Clone)]
struct Instruments {
    token_usage: Histogram<u64>,
    operation_duration: Histogram<f64>,
    turn_duration: Histogram<f64>,
}

impl Instruments {
    fn new(meters: &SdkMeterProvider) -> Self {
        let meter = meters.meter_with_scope(scope());
        // The bucket boundaries the GenAI conventions advise.
        let tokens = (0..14).map(|i| 4f64.powi(i)).collect();
        let seconds: Vec<f64> = (0..14).map(|i| 0.01 * 2f64.powi(i)).collect();
        Self {
            token_usage: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used.")
                .with_boundaries(tokens)
                .build(),
            operation_duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("GenAI operation duration.")
                .with_boundaries(seconds.clone())
                .build(),
            turn_duration: meter
                .f64_histogram("agent.turn.duration")
                .with_unit("s")
                .with_description(
                    "Duration of an agent's turn, from the user's message to the reply.",
                )
                .with_boundaries(seconds)
                .build(),
        }
    }
}

/// Carries the instruments in the subscriber, where the engine finds them.
struct MetricsLayer(Option<Instruments>);

impl<S: Subscriber> Layer<S> for MetricsLayer {}

/// Run `f` with the current subscriber's instruments, if it has any.
fn with_instruments(mut f: impl FnMut(&Instruments)) {
    tracing::dispatcher::get_default(|d| {
        if let Some(MetricsLayer(Some(i))) = d.downcast_ref::<MetricsLayer>() {
            f(i);
        }
    });
}

/// What a model call's metrics are recorded with.
pub(super) struct ChatMetrics<'a> {
    pub(super) provider: &'a str,
    pub(super) request_model: &'a str,
    pub(super) response_model: Option<&'a str>,
    pub(super) server: Option<(&'a str, u16)>,
    pub(super) error_type: Option<&'static str>,
    pub(super) usage: Option<crate::provider::Usage>,
    pub(super) elapsed: Duration,
}

/// `gen_ai.client.operation.duration` and `gen_ai.client.token.usage` of a model call.
pub(super) fn record_chat_metrics(m: &ChatMetrics<'_>) {
    with_instruments(|i| {
        let mut attrs = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", m.provider.to_owned()),
            KeyValue::new("gen_ai.request.model", m.request_model.to_owned()),
        ];
        if let Some(model) = m.response_model {
            attrs.push(KeyValue::new("gen_ai.response.model", model.to_owned()));
        }
        if let Some((host, port)) = m.server {
            attrs.push(KeyValue::new("server.address", host.to_owned()));
            attrs.push(KeyValue::new("server.port", i64::from(port)));
        }
        if let Some(usage) = m.usage {
            for (kind, n) in [
                ("input", usage.input_tokens),
                ("output", usage.output_tokens),
            ] {
                let mut with_type = attrs.clone();
                with_type.push(KeyValue::new("gen_ai.token.type", kind));
                i.token_usage.record(n, &with_type);
            }
        }
        if let Some(e) = m.error_type {
            attrs.push(KeyValue::new("error.type", e));
        }
        i.operation_duration.record(m.elapsed.as_secs_f64(), &attrs);
    });
}

/// `agent.turn.duration` of a turn.
pub(super) fn record_turn_metrics(
    agent: &str,
    provider: &str,
    error_type: Option<&'static str>,
    elapsed: Duration,
) {
    with_instruments(|i| {
        let mut attrs = vec![
            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
            KeyValue::new("gen_ai.agent.name", agent.to_owned()),
            KeyValue::new("gen_ai.provider.name", provider.to_owned()),
        ];
        if let Some(e) = error_type {
            attrs.push(KeyValue::new("error.type", e));
        }
        i.turn_duration.record(elapsed.as_secs_f64(), &attrs);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    fn settings(b: &TelemetryBuilder, vars: &[(&str, &str)]) -> Option<Settings> {
        Settings::resolve(b, &env(vars)).unwrap()
    }

    #[test]
    fn endpoints_get_the_signal_path_once() {
        assert_eq!(
            signal_url("http://127.0.0.1:4318", TRACES_PATH)
                .ok()
                .as_deref(),
            Some("http://127.0.0.1:4318/v1/traces")
        );
        assert_eq!(
            signal_url("http://collector:4318/", TRACES_PATH)
                .ok()
                .as_deref(),
            Some("http://collector:4318/v1/traces")
        );
        assert_eq!(
            signal_url("http://collector:4318/v1/traces", TRACES_PATH)
                .ok()
                .as_deref(),
            Some("http://collector:4318/v1/traces")
        );
        assert_eq!(
            signal_url("http://collector:4318/v1/traces", METRICS_PATH)
                .ok()
                .as_deref(),
            Some("http://collector:4318/v1/metrics")
        );
    }

    #[test]
    fn endpoints_without_http_are_refused_with_the_reason() {
        for bad in ["https://collector:4318", "collector:4318", "not a url", ""] {
            match signal_url(bad, TRACES_PATH) {
                Err(TelemetryError::Endpoint { endpoint, .. }) => assert_eq!(endpoint, bad),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_environment_names_the_endpoints_and_the_service_when_the_code_does_not() {
        let b = Telemetry::from_env();
        let none = settings(&b, &[]).unwrap();
        assert_eq!(none.traces_url, "http://localhost:4318/v1/traces");
        assert_eq!(none.metrics_url, "http://localhost:4318/v1/metrics");
        assert_eq!(none.service_name, None);

        let generic = settings(
            &b,
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/base/"),
                ("OTEL_SERVICE_NAME", "shop"),
            ],
        )
        .unwrap();
        assert_eq!(generic.traces_url, "http://c:4318/base/v1/traces");
        assert_eq!(generic.metrics_url, "http://c:4318/base/v1/metrics");
        assert_eq!(generic.service_name.as_deref(), Some("shop"));

        // The per-signal variables are full URLs and win over the generic one.
        let specific = settings(
            &b,
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/traces"),
                ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m:2/m"),
            ],
        )
        .unwrap();
        assert_eq!(specific.traces_url, "http://t:1/traces");
        assert_eq!(specific.metrics_url, "http://m:2/m");

        // Settings in code win.
        let code = Telemetry::otlp("http://code:9").service_name("mine");
        let s = settings(
            &code,
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/traces"),
                ("OTEL_SERVICE_NAME", "shop"),
            ],
        )
        .unwrap();
        assert_eq!(s.traces_url, "http://code:9/v1/traces");
        assert_eq!(s.metrics_url, "http://code:9/v1/metrics");
        assert_eq!(s.service_name.as_deref(), Some("mine"));

        // A bad variable is named in the error.
        match Settings::resolve(&b, &env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "c:4318")])) {
            Err(TelemetryError::Endpoint { endpoint, .. }) => assert_eq!(endpoint, "c:4318"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn otel_sdk_disabled_turns_the_exporter_off() {
        let b = Telemetry::otlp("http://127.0.0.1:9");
        assert_eq!(settings(&b, &[("OTEL_SDK_DISABLED", "TRUE")]), None);
        assert!(settings(&b, &[("OTEL_SDK_DISABLED", "false")]).is_some());
        let t = b
            .build_with(&env(&[("OTEL_SDK_DISABLED", "true")]))
            .unwrap();
        assert!(t.meter_provider().is_none());
        assert!(t.flush().is_ok());
        assert!(t.shutdown().is_ok());
    }

    #[test]
    fn absolute_source_paths_are_kept_from_the_crate_folder() {
        let cases = [
            (
                "/home/u/.cargo/registry/src/index-1/agent-core-0.1.0/src/agent/turn.rs",
                Some("agent-core-0.1.0/src/agent/turn.rs"),
            ),
            (
                "/work/main/agent-core/src/telemetry/mod.rs",
                Some("agent-core/src/telemetry/mod.rs"),
            ),
            ("/build/app/tests/otel.rs", Some("app/tests/otel.rs")),
            ("C:\\b\\shop\\src\\main.rs", Some("shop\\src\\main.rs")),
            ("/tmp/generated.rs", Some("generated.rs")),
            ("/src/lib.rs", Some("lib.rs")),
            ("agent-core/src/agent/turn.rs", None),
            ("src/main.rs", None),
        ];
        for (path, want) in cases {
            assert_eq!(relative_path(path), want, "{path}");
        }
    }

    #[test]
    fn failures_are_named_in_words() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let f = Failure::of_error(&refused);
        assert_eq!(
            (f.kind.as_str(), f.words.as_str()),
            ("refused", "connection refused")
        );
        let f = Failure::of_status(http::StatusCode::NOT_FOUND);
        assert_eq!(f.words, "HTTP 404 Not Found");
        let f = Failure::of_error(&NoAnswer(Duration::from_secs(2)));
        assert_eq!(f.kind, "timeout");

        let status = ExportStatus::default();
        let lost = Err(opentelemetry_sdk::error::OTelSdkError::InternalFailure(
            "export failed".into(),
        ));
        // A request that failed but whose export succeeded on a retry is no loss.
        status.request_failed("http://x/v1/traces", Failure::of_error(&refused));
        status.settled("http://x/v1/traces", &Ok(()));
        assert_eq!(status.take_failure(), None);
        for url in ["http://x/v1/traces", "http://x/v1/metrics"] {
            status.request_failed(url, Failure::of_status(http::StatusCode::NOT_FOUND));
            status.settled(url, &lost);
        }
        assert_eq!(
            status.take_failure(),
            Some((
                "http://x/v1/traces".to_owned(),
                "HTTP 404 Not Found (2 exports failed)".to_owned()
            ))
        );
        assert_eq!(status.take_failure(), None);
        // Without a request's cause, the SDK's error.
        status.settled("http://x/v1/traces", &lost);
        assert!(
            status
                .take_failure()
                .is_some_and(|(_, words)| words.contains("export failed"))
        );
    }
}
