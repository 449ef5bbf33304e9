//! A middleware made of two plain functions, one before the service it wraps and one after,
//! in one future with nothing boxed. The rate limits (on a scope) and the `ETag` (on a route)
//! are such steps; as `from_fn` layers each cost every request they saw a boxed future
//! (docs/PERFORMANCE.md, session 11).

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll};

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::{Error, HttpResponse};
use pin_project_lite::pin_project;

/// What a middleware does before and after the service it wraps.
pub trait Around: 'static {
    /// What `before` hands on to `after`.
    type Carry;

    /// Before the service: `Err` answers the request at once with that response (boxed: the
    /// rare path should not make every request's result larger).
    fn before(&self, request: &mut ServiceRequest) -> Result<Self::Carry, Box<HttpResponse>>;

    /// After the service answered.
    fn after(
        &self,
        carry: Self::Carry,
        response: ServiceResponse<BoxBody>,
    ) -> ServiceResponse<BoxBody>;
}

/// `App::wrap`, `Scope::wrap` or `Resource::wrap` this around what the steps apply to.
pub struct Wrap<A>(Rc<A>);

impl<A> Wrap<A> {
    pub fn new(around: A) -> Self {
        Self(Rc::new(around))
    }
}

impl<S, B, A> Transform<S, ServiceRequest> for Wrap<A>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody + 'static,
    A: Around,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = Error;
    type Transform = Wrapped<S, A>;
    type InitError = ();
    type Future = std::future::Ready<Result<Self::Transform, Self::InitError>>;

    fn new_transform(&self, service: S) -> Self::Future {
        std::future::ready(Ok(Wrapped {
            service,
            around: Rc::clone(&self.0),
        }))
    }
}

pub struct Wrapped<S, A> {
    service: S,
    around: Rc<A>,
}

impl<S, B, A> Service<ServiceRequest> for Wrapped<S, A>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody + 'static,
    A: Around,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = Error;
    type Future = After<S::Future, A>;

    actix_service::forward_ready!(service);

    fn call(&self, mut request: ServiceRequest) -> Self::Future {
        match self.around.before(&mut request) {
            Ok(carry) => After::Routed {
                answer: self.service.call(request),
                then: Some((Rc::clone(&self.around), carry)),
            },
            Err(response) => After::Answered {
                response: Some(request.into_response(*response)),
            },
        }
    }
}

pin_project! {
    #[project = AfterProj]
    pub enum After<F, A: Around> {
        Routed { #[pin] answer: F, then: Option<(Rc<A>, A::Carry)> },
        Answered { response: Option<ServiceResponse<BoxBody>> },
    }
}

impl<F, B, A> Future for After<F, A>
where
    F: Future<Output = Result<ServiceResponse<B>, Error>>,
    B: MessageBody + 'static,
    A: Around,
{
    type Output = Result<ServiceResponse<BoxBody>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            AfterProj::Routed { answer, then } => {
                let response = ready!(answer.poll(cx))?.map_into_boxed_body();
                Poll::Ready(match then.take() {
                    Some((around, carry)) => Ok(around.after(carry, response)),
                    None => Err(polled_again()),
                })
            }
            AfterProj::Answered { response } => {
                Poll::Ready(response.take().ok_or_else(polled_again))
            }
        }
    }
}

/// A future polled after it answered: a bug in whatever polls it, answered as one.
pub(super) fn polled_again() -> Error {
    super::error::ApiError::internal().into()
}

/// A middleware only some deployments run (CORS, the cluster's forwarding and consistency).
/// Unlike actix's `Condition`, whose future is as large as the middleware's own whether it runs
/// or not (and every request's future is moved a few times on its way), a request where it is
/// off carries only the future of what it wraps; where it is on, its future is boxed.
pub struct Optional<T>(Option<T>);

impl<T> Optional<T> {
    pub fn new(on: bool, middleware: impl FnOnce() -> T) -> Self {
        Self(on.then(middleware))
    }
}

impl<S, T, B, B2> Transform<S, ServiceRequest> for Optional<T>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    T: Transform<S, ServiceRequest, Response = ServiceResponse<B2>, Error = Error, InitError = ()>,
    T::Transform: 'static,
    T::Future: 'static,
    B: MessageBody + 'static,
    B2: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = Error;
    type Transform = OptionalService<T::Transform, S>;
    type InitError = ();
    type Future = futures_util::future::LocalBoxFuture<'static, Result<Self::Transform, ()>>;

    fn new_transform(&self, service: S) -> Self::Future {
        match &self.0 {
            Some(middleware) => {
                let made = middleware.new_transform(service);
                Box::pin(async move { made.await.map(OptionalService::On) })
            }
            None => Box::pin(std::future::ready(Ok(OptionalService::Off(service)))),
        }
    }
}

pub enum OptionalService<On, Off> {
    On(On),
    Off(Off),
}

impl<On, Off, B, B2> Service<ServiceRequest> for OptionalService<On, Off>
where
    On: Service<ServiceRequest, Response = ServiceResponse<B2>, Error = Error>,
    On::Future: 'static,
    Off: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error>,
    B: MessageBody + 'static,
    B2: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = Error;
    type Future = OptionalFuture<Off::Future, B2>;

    fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        match self {
            Self::On(service) => service.poll_ready(cx),
            Self::Off(service) => service.poll_ready(cx),
        }
    }

    fn call(&self, request: ServiceRequest) -> Self::Future {
        match self {
            Self::On(service) => OptionalFuture::On {
                answer: Box::pin(service.call(request)),
            },
            Self::Off(service) => OptionalFuture::Off {
                answer: service.call(request),
            },
        }
    }
}

type Boxed<B> = Pin<Box<dyn Future<Output = Result<ServiceResponse<B>, Error>>>>;

pin_project! {
    #[project = OptionalProj]
    pub enum OptionalFuture<F, B2> {
        On { answer: Boxed<B2> },
        Off { #[pin] answer: F },
    }
}

impl<F, B, B2> Future for OptionalFuture<F, B2>
where
    F: Future<Output = Result<ServiceResponse<B>, Error>>,
    B: MessageBody + 'static,
    B2: MessageBody + 'static,
{
    type Output = Result<ServiceResponse<BoxBody>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let response = match self.project() {
            OptionalProj::On { answer } => ready!(answer.as_mut().poll(cx))?.map_into_boxed_body(),
            OptionalProj::Off { answer } => ready!(answer.poll(cx))?.map_into_boxed_body(),
        };
        Poll::Ready(Ok(response))
    }
}
