//! A gate in front of every call of a server: it admits a request (and holds what it handed out,
//! a permit or a name, until the answer is ready) or refuses it at once with a status, before any
//! service sees it. The server's request limit and its access check are such gates.

use std::future::Future;
use tonic::codegen::http;

/// What decides whether a request goes in.
pub(crate) trait Gate: Clone + Send + Sync + 'static {
    /// What an admitted request holds until its answer is ready (dropped then).
    type Pass: Send + 'static;

    /// Admits `request` (which it may mark, in its extensions) or refuses it with a status.
    fn admit<B>(&self, request: &mut http::Request<B>) -> Result<Self::Pass, tonic::Status>;

    /// Called when the answer is first polled: inside the request's tracing span (entered
    /// around `call` and around the answer by [`crate::serving::RequestSpanLayer`]).
    fn entered(_pass: &Self::Pass) {}
}

/// The tower layer of a [`Gate`].
#[derive(Clone, Debug)]
pub(crate) struct GateLayer<G>(pub(crate) G);

impl<S, G: Clone> tower::Layer<S> for GateLayer<G> {
    type Service = Gated<S, G>;

    fn layer(&self, inner: S) -> Gated<S, G> {
        Gated {
            inner,
            gate: self.0.clone(),
        }
    }
}

/// A service behind a [`Gate`].
#[derive(Clone, Debug)]
pub(crate) struct Gated<S, G> {
    inner: S,
    gate: G,
}

type BoxFuture<T> = std::pin::Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, G, B> tower::Service<http::Request<B>> for Gated<S, G>
where
    S: tower::Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    G: Gate,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, S::Error>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        match self.gate.admit(&mut request) {
            Ok(pass) => {
                let answer = self.inner.call(request);
                Box::pin(async move {
                    G::entered(&pass);
                    let response = answer.await;
                    drop(pass);
                    response
                })
            }
            Err(status) => {
                let refused = status.into_http::<tonic::body::Body>();
                Box::pin(async move { Ok(refused) })
            }
        }
    }
}
