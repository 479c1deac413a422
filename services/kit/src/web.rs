//! What browsers need from a server besides gRPC-web itself (which [`crate::serving`] turns on for
//! every server): the static files of `--web-root` beside the API on the same port, and CORS
//! answers for the origins of `--web-allow-origin`.
//!
//! The files are served for `GET` and `HEAD` only, from inside the root (a path that climbs out
//! of it with `..` is refused), `index.html` for a folder. A gRPC call to a method no service has
//! is still answered `UNIMPLEMENTED`, never with a file or an HTML 404.

use crate::serving::ServeError;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tonic::codegen::http;
use tonic::service::Routes;
use tower::ServiceExt as _;

/// The request headers a gRPC-web page sends: the protocol's own, and Arbiter's (API key, seat
/// token, request id, W3C trace context).
const ALLOWED_HEADERS: [&str; 9] = [
    "content-type",
    "x-grpc-web",
    "x-user-agent",
    "grpc-timeout",
    "x-api-key",
    "authorization",
    "x-request-id",
    "traceparent",
    "tracestate",
];

/// The response headers a page may read: the call's status and its details.
const EXPOSED_HEADERS: [&str; 3] = ["grpc-status", "grpc-message", "grpc-status-details-bin"];

/// The CORS layer for `origins` (`None` when there are none: same-origin pages only).
///
/// # Errors
/// An origin that is not `scheme://host[:port]`.
pub(crate) fn cors(origins: &[String]) -> Result<Option<tower_http::cors::CorsLayer>, ServeError> {
    use tower_http::cors::{AllowOrigin, CorsLayer};
    if origins.is_empty() {
        return Ok(None);
    }
    let mut values = Vec::with_capacity(origins.len());
    for origin in origins {
        let origin = origin.trim();
        let valid = (origin.starts_with("http://") || origin.starts_with("https://"))
            && !origin.ends_with('/')
            && origin
                .split("://")
                .nth(1)
                .is_some_and(|host| !host.is_empty() && !host.contains('/') && host.is_ascii());
        let value = http::HeaderValue::from_str(origin).ok().filter(|_| valid);
        let Some(value) = value else {
            return Err(format!(
                "--web-allow-origin {origin:?} is not an origin such as https://play.example.com \
                 (scheme and host, an optional port, no path)"
            )
            .into());
        };
        values.push(value);
    }
    let header = |name: &&'static str| http::HeaderName::from_static(name);
    Ok(Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(values))
            .allow_methods([http::Method::POST])
            .allow_headers(ALLOWED_HEADERS.iter().map(header).collect::<Vec<_>>())
            .expose_headers(EXPOSED_HEADERS.iter().map(header).collect::<Vec<_>>())
            .max_age(Duration::from_secs(600)),
    ))
}

/// `root`, checked to be a readable folder before serving starts.
///
/// # Errors
/// A root that does not exist or is not a folder, named with its flag.
pub(crate) fn check_root(root: &Path) -> Result<PathBuf, ServeError> {
    match std::fs::metadata(root) {
        Ok(meta) if meta.is_dir() => Ok(root.to_path_buf()),
        Ok(_) => Err(format!("--web-root {}: not a folder", root.display()).into()),
        Err(e) => Err(format!("--web-root {}: {e}", root.display()).into()),
    }
}

/// `routes` with the files of `root` served for every path no service has.
pub(crate) fn with_files(routes: Routes, root: PathBuf) -> Routes {
    let files = tower_http::services::ServeDir::new(root);
    let fallback = tower::service_fn(move |request: http::Request<axum::body::Body>| {
        let files = files.clone();
        async move {
            if is_grpc(&request) {
                // A method no service has: what tonic's own router answers.
                let status = tonic::Status::unimplemented("no such method on this server");
                return Ok::<_, std::convert::Infallible>(status.into_http::<axum::body::Body>());
            }
            let response = files.oneshot(request).await?;
            Ok(response.map(axum::body::Body::new))
        }
    });
    Routes::from(
        routes
            .prepare()
            .into_axum_router()
            .fallback_service(fallback),
    )
}

/// Whether `request` is a gRPC call (gRPC-web ones arrive translated to gRPC).
fn is_grpc<B>(request: &http::Request<B>) -> bool {
    request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc"))
}

/// gRPC-web for browsers: tonic-web's translation for gRPC-web calls, and every other HTTP/1.x
/// request (a page's files) passed on as it came (tonic-web alone answers those `400`). HTTP/2
/// gRPC passes through either way.
#[derive(Clone, Debug, Default)]
pub(crate) struct BrowserLayer;

impl<S: Clone> tower::Layer<S> for BrowserLayer {
    type Service = Browser<S>;

    fn layer(&self, inner: S) -> Browser<S> {
        Browser {
            grpc_web: tower::Layer::layer(&tonic_web::GrpcWebLayer::new(), inner.clone()),
            inner,
        }
    }
}

/// A service behind [`BrowserLayer`].
#[derive(Clone, Debug)]
pub(crate) struct Browser<S> {
    grpc_web: tonic_web::GrpcWebService<S>,
    inner: S,
}

type Body = tonic::body::Body;
type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

impl<S> tower::Service<http::Request<Body>> for Browser<S>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>> + Send,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<http::Response<Body>, S::Error>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        // Both copies of the service below must be ready: either may take the call.
        match self.inner.poll_ready(cx) {
            std::task::Poll::Ready(Ok(())) => {
                tower::Service::<http::Request<Body>>::poll_ready(&mut self.grpc_web, cx)
            }
            other => other,
        }
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let plain = request.version() < http::Version::HTTP_2
            && !request
                .headers()
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("application/grpc-web"));
        if plain {
            Box::pin(self.inner.call(request))
        } else {
            Box::pin(self.grpc_web.call(request))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_checked() {
        assert!(cors(&[]).expect("none").is_none());
        assert!(
            cors(&[
                "https://play.example.com".into(),
                "http://127.0.0.1:8080".into()
            ])
            .expect("valid")
            .is_some()
        );
        for bad in [
            "play.example.com",
            "https://play.example.com/",
            "https://play.example.com/page",
            "ftp://x",
            "https://",
            "https://exa\u{e9}mple.com",
            "https://a\nb",
        ] {
            let err = cors(&[bad.into()]).expect_err(bad).to_string();
            assert!(err.contains("--web-allow-origin"), "{err}");
        }
    }

    #[test]
    fn the_root_must_be_a_folder() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert!(check_root(dir.path()).is_ok());
        let file = dir.path().join("index.html");
        std::fs::write(&file, "<p>hi</p>").expect("write");
        let err = check_root(&file).expect_err("a file").to_string();
        assert!(err.contains("not a folder"), "{err}");
        let err = check_root(&dir.path().join("missing"))
            .expect_err("missing")
            .to_string();
        assert!(err.contains("--web-root"), "{err}");
    }
}
