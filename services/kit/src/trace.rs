//! Traces: `tracing` spans exported as OpenTelemetry spans over OTLP/gRPC
//! (`--otlp-endpoint`, off by default), and the W3C trace context (`traceparent`) read from
//! every call's metadata and written into the calls a service makes, so that one trace follows
//! a matchmaking wave into the match service's `CreateMatch`, or a batch job from `SubmitJob`
//! to the worker that analyses its games.
//!
//! [`crate::init_tracing`] installs the exporter with the log layer; the serving kit's request
//! span adopts the caller's context ([`adopt`]); clients call [`inject`] on their requests'
//! metadata; work handed to another process through a store carries [`traceparent`], which
//! the other side [`follow`]s. With traces off, `inject` and `traceparent` do nothing, and a
//! call's span still records the `trace_id` its caller sent, for the logs.

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tonic::codegen::http;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// How long an export to the collector may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether this process exports traces.
static ON: AtomicBool = AtomicBool::new(false);

/// Whether this process exports traces (an OTLP endpoint was configured).
pub fn enabled() -> bool {
    ON.load(Ordering::Relaxed)
}

/// The exporter of a process that traces: [`Tracing::shutdown`] sends the spans still
/// buffered before the process exits.
#[derive(Debug, Default)]
#[must_use = "shut it down at exit, or the last spans are lost"]
pub struct Tracing {
    provider: Option<SdkTracerProvider>,
}

impl Tracing {
    /// Sends the buffered spans (for up to 5 s) and stops the exporter.
    pub async fn shutdown(self) {
        if let Some(provider) = self.provider {
            // The exporter's thread waits for the runtime to carry its last export: off the
            // async workers.
            let _ = tokio::task::spawn_blocking(move || {
                if let Err(e) = provider.shutdown_with_timeout(EXPORT_TIMEOUT) {
                    tracing::debug!(error = %e, "traces: the last export failed");
                }
            })
            .await;
        }
    }
}

/// The OpenTelemetry layer for `tracing` exporting to `endpoint` (an `http://` or `https://`
/// URL of an OTLP/gRPC collector) under the service name `service`, with the provider to
/// shut down at exit. Call it within a Tokio runtime (the exporter's channel lives there).
///
/// # Errors
/// The endpoint cannot be used.
pub(crate) fn layer<S>(
    endpoint: &str,
    service: &'static str,
) -> Result<(impl tracing_subscriber::Layer<S> + use<S>, Tracing), String>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(endpoint)
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|e| format!("--otlp-endpoint {endpoint}: {e}"))?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service)
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("arbiter");
    ON.store(true, Ordering::Relaxed);
    let layer = tracing_opentelemetry::layer().with_tracer(tracer);
    Ok((
        layer,
        Tracing {
            provider: Some(provider),
        },
    ))
}

/// Reads the trace context of a request's headers.
struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// Writes the trace context into a request's metadata.
struct Metadata<'a>(&'a mut tonic::metadata::MetadataMap);

impl Injector for Metadata<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(key), Ok(value)) = (
            tonic::metadata::MetadataKey::from_bytes(key.as_bytes()),
            value.parse(),
        ) {
            self.0.insert(key, value);
        }
    }
}

/// One `traceparent` value, read or written.
#[derive(Default)]
struct Single(Option<String>);

impl Extractor for Single {
    fn get(&self, key: &str) -> Option<&str> {
        (key == "traceparent")
            .then_some(self.0.as_deref())
            .flatten()
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent"]
    }
}

impl Injector for Single {
    fn set(&mut self, key: &str, value: String) {
        if key == "traceparent" {
            self.0 = Some(value);
        }
    }
}

/// Makes `span` (a call's span, with an empty `trace_id` field) a child of the trace context
/// the caller sent in `traceparent`, if any, and records the trace id on it: the call's own
/// trace when traces are on, else the caller's (so that log lines carry it either way).
pub fn adopt(span: &tracing::Span, headers: &http::HeaderMap) {
    let cx = TraceContextPropagator::new().extract(&Headers(headers));
    let trace_id = if enabled() {
        let _ = span.set_parent(cx);
        span.context().span().span_context().trace_id()
    } else {
        cx.span().span_context().trace_id()
    };
    if trace_id != opentelemetry::trace::TraceId::INVALID {
        span.record("trace_id", tracing::field::display(trace_id));
    }
}

/// Writes the current span's trace context into `metadata` (`traceparent`), for a call this
/// process makes; nothing when traces are off.
pub fn inject(metadata: &mut tonic::metadata::MetadataMap) {
    if enabled() {
        let cx = tracing::Span::current().context();
        TraceContextPropagator::new().inject_context(&cx, &mut Metadata(metadata));
    }
}

/// The current span's trace context as a `traceparent` value, to store with work another
/// process will do; `None` when traces are off.
pub fn traceparent() -> Option<String> {
    if !enabled() {
        return None;
    }
    let mut out = Single::default();
    TraceContextPropagator::new().inject_context(&tracing::Span::current().context(), &mut out);
    out.0
}

/// Makes `span` a child of the trace context in `traceparent` (stored with the work by
/// [`traceparent`]); nothing when traces are off or the value is not one.
pub fn follow(span: &tracing::Span, traceparent: &str) {
    if !enabled() || traceparent.is_empty() {
        return;
    }
    let cx = TraceContextPropagator::new().extract(&Single(Some(traceparent.to_owned())));
    if cx.span().span_context().is_valid() {
        let _ = span.set_parent(cx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_callers_trace_id_is_read_and_bad_ones_ignored() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let mut headers = http::HeaderMap::new();
        headers.insert("traceparent", good.parse().unwrap());
        let cx = TraceContextPropagator::new().extract(&Headers(&headers));
        assert_eq!(
            cx.span().span_context().trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        for bad in [
            "",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736",
            "\u{7f}",
        ] {
            let mut headers = http::HeaderMap::new();
            if let Ok(v) = bad.parse() {
                headers.insert("traceparent", v);
            }
            let cx = TraceContextPropagator::new().extract(&Headers(&headers));
            assert!(!cx.span().span_context().is_valid(), "{bad:?}");
        }
    }

    #[test]
    fn nothing_is_written_with_traces_off() {
        assert!(!enabled());
        let mut m = tonic::metadata::MetadataMap::new();
        inject(&mut m);
        assert!(m.is_empty());
        assert_eq!(traceparent(), None);
    }
}
