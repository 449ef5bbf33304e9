//! The HTTP server's connections, with three additions to actix-web's: after a body is refused as
//! too large, the connection reads at most [`READ_AFTER_REFUSAL`] more bytes, then ends; a
//! connection notes when its client has gone ([`PeerGone`]), for the vote streams; and at the
//! connection cap the longest-idle connection is closed to make room for a new client
//! ([`Connections`]), as nginx and HAProxy do, so that idle clients never lock a new one out. A
//! connection is idle whenever no request of it is being answered: between requests, but also
//! before its first request and while its client is still sending a request's head (a client
//! that connects and never sends a byte is as idle as a finished keep-alive one).
//!
//! actix-http answers an early response and then goes on reading: it lingers on a connection
//! whose body was not read (a `Content-Length` body: up to `client_disconnect_timeout`, some
//! 95 MiB on loopback in one second) and drains a chunked body to its end, however long. A client
//! that sends 10 GiB after its 413 would be read to the last byte. Here the stream itself reports
//! end of input once the budget is spent, so actix-http closes the connection.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use actix::{Arbiter, ArbiterHandle};
use actix_http::error::DispatchError;
use actix_http::{HttpService, KeepAlive, Protocol, Request, Response};
use actix_server::Server;
use actix_service::{
    apply_fn_factory, fn_service, map_config, IntoServiceFactory, Service, ServiceFactory,
    ServiceFactoryExt,
};
use actix_web::body::MessageBody;
use actix_web::dev::AppConfig;
use actix_web::rt::net::TcpStream;
use actix_web::HttpRequest;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;

/// The server's graceful shutdown as one worker's connections wait for it. A connection polls
/// its signal each time its dispatcher runs, several times a request. A shared `watch` keeps
/// its wakers behind a lock that every worker's connections share, so each poll took a lock
/// whose cache line moved between the cores (docs/PERFORMANCE.md, session 12). Here one task
/// per worker waits for the stop's signal ([`Drain::drain`]) and wakes the worker's
/// connections; a connection's poll takes a lock only its own worker uses.
struct WorkerShutdown {
    begun: Cell<bool>,
    connections: tokio::sync::Notify,
}

impl WorkerShutdown {
    /// Made on the worker's thread, as the worker starts; when the stop begins, the worker's
    /// idle connections (no request in flight, no stream open) are closed at once, those that
    /// never sent a request among them, instead of waiting out their timeouts.
    fn start(mut draining: watch::Receiver<bool>, all: Rc<Connections>) -> Rc<Self> {
        let worker = Rc::new(Self {
            begun: Cell::new(false),
            connections: tokio::sync::Notify::new(),
        });
        let waiting = Rc::clone(&worker);
        actix_web::rt::spawn(async move {
            // An error: the server is gone, and with it every connection of this worker.
            if draining.wait_for(|begun| *begun).await.is_err() {
                return;
            }
            waiting.begun.set(true);
            waiting.connections.notify_waiters();
            all.close_idle();
        });
        worker
    }

    /// Resolves once the graceful shutdown has begun. The flag and the wait are looked at in
    /// one poll on the worker's one thread, so no wake-up falls between them.
    async fn begun(self: Rc<Self>) {
        if !self.begun.get() {
            self.connections.notified().await;
        }
    }
}

/// Resolves once the server has begun to stop, for a response that would otherwise go on for
/// ever (a vote stream): the stream ends then, so that the stop does not wait for it.
pub struct Stopping(Option<Pin<Box<dyn std::future::Future<Output = ()>>>>);

impl Stopping {
    /// The signal of the worker `request` arrived on (never resolves for one not made here).
    pub fn of(request: &HttpRequest) -> Self {
        Self(
            request
                .conn_data::<Rc<WorkerShutdown>>()
                .map(|worker| Box::pin(Rc::clone(worker).begun()) as _),
        )
    }

    /// Whether the stop has begun; otherwise `cx` is woken when it does.
    pub fn poll_begun(&mut self, cx: &mut Context<'_>) -> bool {
        self.0
            .as_mut()
            .is_some_and(|begun| begun.as_mut().poll(cx).is_ready())
    }
}

/// How much more of a refused body is read (what was already in flight) before the connection
/// ends; a few hundred KiB whatever the client sends.
pub const READ_AFTER_REFUSAL: usize = 256 * 1024;

/// Shared by a connection and the requests on it: how much may still be read, once limited.
#[derive(Clone, Default)]
pub struct ReadLimit(Rc<Cell<Option<usize>>>);

impl ReadLimit {
    /// From now on the connection reads at most [`READ_AFTER_REFUSAL`] bytes, then ends.
    pub fn stop_reading(&self) {
        if self.0.get().is_none() {
            self.0.set(Some(READ_AFTER_REFUSAL));
        }
    }

    /// Limits the connection `request` arrived on (a no-op for a connection not made here).
    pub fn stop_reading_request(request: &HttpRequest) {
        if let Some(limit) = request.conn_data::<ReadLimit>() {
            limit.stop_reading();
        }
    }
}

/// Set once the client has closed its side of the connection, or reset it. actix-http goes
/// on reading while it streams a response, but streams on to a client that has left until a
/// write fails, which for an idle vote stream is two heartbeats away; the stream looks at this
/// instead, so that it ends, and gives back its place among the bot's streams, at once.
#[derive(Clone, Default)]
pub struct PeerGone(Rc<Cell<bool>>);

impl PeerGone {
    pub fn is_gone(&self) -> bool {
        self.0.get()
    }

    /// The flag of the connection `request` arrived on (never set for one not made here).
    pub fn of(request: &HttpRequest) -> Self {
        request.conn_data::<PeerGone>().cloned().unwrap_or_default()
    }
}

/// What a worker knows of one of its connections: whether it may be closed to make room.
pub struct Activity {
    /// Requests in flight on it, and vote streams open on it.
    busy: Cell<u32>,
    /// Since when it has had nothing to do: since it was accepted, then since its last answer
    /// was made. A request whose head is still arriving does not count as something to do, so
    /// a client that trickles a header byte a second stays as idle as one that sends nothing.
    idle_since: Cell<Instant>,
    /// Chosen to make room: its next read is the end of its input, and actix-http closes it.
    closing: Cell<bool>,
    /// Woken to make that read happen while the connection waits for its next request.
    reader: RefCell<Option<Waker>>,
}

impl Activity {
    /// Its next read is the end of its input, and actix-http closes it.
    fn close(&self) {
        self.closing.set(true);
        if let Some(reader) = self.reader.borrow_mut().take() {
            reader.wake();
        }
    }
}

/// Keeps a connection busy (a request in flight, a vote stream open) while held.
pub struct Busy(Rc<Activity>);

impl Busy {
    fn enter(activity: Rc<Activity>) -> Self {
        activity.busy.set(activity.busy.get() + 1);
        Self(activity)
    }

    /// Keeps the connection `request` arrived on busy while the returned value lives (a vote
    /// stream's body holds it); `None` for a connection not made here.
    pub fn of(request: &HttpRequest) -> Option<Self> {
        request
            .conn_data::<Rc<Activity>>()
            .cloned()
            .map(Self::enter)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let busy = self.0.busy.get().saturating_sub(1);
        self.0.busy.set(busy);
        if busy == 0 {
            self.0.idle_since.set(Instant::now());
        }
    }
}

/// One worker's connections. Past `cap` open at once, each new connection closes the one that
/// has been idle the longest (never one with a request in flight or a vote stream open, and
/// possibly one that has not sent its first request yet); while
/// none is idle, new connections are still taken up to the worker's hard limit, then wait in
/// the listen backlog.
struct Connections {
    cap: usize,
    open: Cell<usize>,
    all: RefCell<Vec<Weak<Activity>>>,
}

impl Connections {
    fn new(cap: usize) -> Rc<Self> {
        Rc::new(Self {
            cap,
            open: Cell::new(0),
            all: RefCell::new(Vec::new()),
        })
    }

    fn opened(&self) -> Rc<Activity> {
        let activity = Rc::new(Activity {
            busy: Cell::new(0),
            idle_since: Cell::new(Instant::now()),
            closing: Cell::new(false),
            reader: RefCell::new(None),
        });
        let open = self.open.get() + 1;
        self.open.set(open);
        let mut all = self.all.borrow_mut();
        if all.len() >= 2 * open.max(16) {
            all.retain(|a| a.strong_count() > 0);
        }
        all.push(Rc::downgrade(&activity));
        drop(all);
        if open > self.cap {
            self.close_longest_idle();
        }
        activity
    }

    fn closed(&self) {
        self.open.set(self.open.get().saturating_sub(1));
    }

    /// Closes every connection with nothing to do: the server is stopping.
    fn close_idle(&self) {
        let all = self.all.borrow();
        for activity in all.iter().filter_map(Weak::upgrade) {
            if activity.busy.get() == 0 {
                activity.close();
            }
        }
    }

    /// A scan of this worker's connections, only while it is at its cap (the one just
    /// accepted is the newest, so never the one chosen while another is idle).
    fn close_longest_idle(&self) {
        let mut all = self.all.borrow_mut();
        all.retain(|a| a.strong_count() > 0);
        let longest = all
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|a| a.busy.get() == 0 && !a.closing.get())
            .map(|a| (a.idle_since.get(), a))
            .min_by_key(|(since, _)| *since);
        if let Some((_, activity)) = longest {
            activity.close();
        }
    }
}

/// The connections a worker with `cap` takes at most: past its cap, while none of its
/// connections is idle, it takes a sixteenth more (at least 16).
pub fn hard_limit(cap: usize) -> usize {
    cap.saturating_add((cap / 16).max(16))
}

/// A TCP stream that honours its [`ReadLimit`], notes when its client has gone, and ends when
/// chosen to make room.
pub struct LimitedStream {
    io: TcpStream,
    limit: ReadLimit,
    gone: PeerGone,
    activity: Rc<Activity>,
    connections: Rc<Connections>,
    open: Arc<OpenConnections>,
}

impl LimitedStream {
    /// A connection just accepted, counted among its worker's (which may choose an idle one to
    /// end for it) and among the server's (which a stop waits to see end).
    fn accepted(io: TcpStream, connections: Rc<Connections>, open: Arc<OpenConnections>) -> Self {
        let activity = connections.opened();
        let now = open.count.fetch_add(1, Ordering::AcqRel) + 1;
        open.peak.fetch_max(now, Ordering::AcqRel);
        Self {
            io,
            limit: ReadLimit::default(),
            gone: PeerGone::default(),
            activity,
            connections,
            open,
        }
    }
}

impl Drop for LimitedStream {
    fn drop(&mut self) {
        self.connections.closed();
        if self.open.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.open.none.notify_waiters();
        }
    }
}

/// The server's connections, counted on every worker: a stop waits for them to end before its
/// last snapshot, and the end of a burst of them has the allocator give its free memory back
/// (`give_back`). Two atomic operations when a connection opens and one when it closes;
/// nothing per request.
#[derive(Default)]
struct OpenConnections {
    count: AtomicUsize,
    /// The most open at once since the last burst ended.
    peak: AtomicUsize,
    none: tokio::sync::Notify,
}

impl OpenConnections {
    /// Whether a burst of connections has ended since this last said so; the next peak is
    /// counted from what is open now. (A connection accepted between the two reads may be
    /// left out of the peak: the next one counts it.)
    fn burst_ended(&self) -> bool {
        let open = self.count.load(Ordering::Acquire);
        let ended = super::give_back::burst_ended(self.peak.load(Ordering::Acquire), open);
        if ended {
            self.peak.store(open, Ordering::Release);
        }
        ended
    }

    async fn none_left(&self) {
        loop {
            let notified = self.none.notified();
            tokio::pin!(notified);
            // Registered before the count is read: a close between the two still wakes it.
            notified.as_mut().enable();
            if self.count.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl AsyncRead for LimitedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.activity.closing.get() {
            return Poll::Ready(Ok(()));
        }
        let Some(left) = this.limit.0.get() else {
            let before = buf.filled().len();
            let read = Pin::new(&mut this.io).poll_read(cx, buf);
            if read.is_pending() {
                let mut reader = this.activity.reader.borrow_mut();
                if !reader.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    *reader = Some(cx.waker().clone());
                }
            }
            // Nothing read into room for something is the end of the client's input.
            let ended = matches!(read, Poll::Ready(Ok(())))
                && buf.filled().len() == before
                && buf.remaining() > 0;
            if ended || matches!(read, Poll::Ready(Err(_))) {
                this.gone.0.set(true);
            }
            return read;
        };
        if left == 0 {
            // End of input: actix-http closes the connection.
            return Poll::Ready(Ok(()));
        }
        // Refused traffic only: a small copy costs nothing that matters.
        let mut scratch = [0u8; 8192];
        let room = left.min(buf.remaining()).min(scratch.len());
        let mut small = ReadBuf::new(&mut scratch[..room]);
        match Pin::new(&mut this.io).poll_read(cx, &mut small) {
            Poll::Ready(Ok(())) => {
                let read = small.filled();
                this.limit.0.set(Some(left - read.len()));
                buf.put_slice(read);
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

impl AsyncWrite for LimitedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

/// The server's settings that actix-web's `HttpServer` would otherwise take.
pub struct ServerOptions {
    pub workers: usize,
    /// Per worker: past it, the longest-idle connection is closed for each new one.
    pub max_connections: usize,
    pub client_request_timeout: Duration,
    pub client_disconnect_timeout: Duration,
    pub keep_alive: Duration,
}

/// How much a connection gathers before it writes: a stream's pieces are gathered up to this,
/// plus one piece of at most `STREAM_PIECE` (32 KiB), which keeps the buffer within the
/// 128 KiB that actix-http keeps between writes. (Its default, 32 KiB, would take three
/// writes for each one of these while a busy stream sends its votes of an interval.)
const STREAM_WRITE_BUFFER: usize = 96 * 1024;

/// A server whose workers run and accept connections, with no application behind them yet:
/// each connection waits until [`Opener::open`] gives the workers what they build their app
/// from. The workers' threads exist before anything is loaded, so that the bot actors can live
/// on them (docs/PERFORMANCE.md, "The writes, thread by thread").
pub struct Serving<T> {
    /// Runs the server from here on; its workers are up and accepting already.
    pub server: Server,
    /// The arbiter of each worker of this server, in no particular order.
    pub workers: Vec<ArbiterHandle>,
    pub opener: Opener<T>,
    pub drain: Drain,
}

/// Opens a [`Serving`] server to requests.
pub struct Opener<T>(watch::Sender<Option<T>>);

impl<T> Opener<T> {
    /// Each worker builds its app from `value`, once, and answers the connections that waited
    /// (as they waited in the listen backlog before the server ran).
    pub fn open(&self, value: T) {
        self.0.send_replace(Some(value));
    }
}

/// The first half of a stop: no new connection, and the ones open end once their answer is
/// made. The second half, `ServerHandle::stop`, ends the workers and their threads.
pub struct Drain {
    begin: watch::Sender<bool>,
    open: Arc<OpenConnections>,
}

impl Drain {
    /// Stops accepting, lets every connection finish the request it is answering (vote
    /// streams end, idle connections close at once) and waits for them to end, at most
    /// `patience`. Whether they all ended. The workers, and the bot actors on their threads,
    /// go on until the server is stopped: the last snapshot is taken between the two.
    pub async fn drain(&self, server: &actix_server::ServerHandle, patience: Duration) -> bool {
        server.pause().await;
        self.begin.send_replace(true);
        tokio::time::timeout(patience, self.open.none_left())
            .await
            .is_ok()
    }
}

/// Seconds a stop waits for the requests in flight before the workers are stopped anyway.
pub const SHUTDOWN_PATIENCE: Duration = Duration::from_secs(1);

/// Serves the app `factory` makes (on each worker, from the value given to [`Opener::open`]) on
/// `listener` as `HttpServer` would (HTTP/1, graceful stop, no signal handling of its own),
/// over [`LimitedStream`] connections. The workers are started here: when this returns, each
/// has run its part of the start and reported its arbiter.
pub async fn serve<T, F, I, S, B>(
    listener: TcpListener,
    options: ServerOptions,
    factory: F,
) -> io::Result<Serving<T>>
where
    T: Clone + Send + Sync + 'static,
    F: Fn(&T) -> I + Send + Clone + 'static,
    I: IntoServiceFactory<S, Request>,
    S: ServiceFactory<Request, Config = AppConfig> + 'static,
    S::Error: Into<actix_web::Error> + 'static,
    S::InitError: std::fmt::Debug,
    S::Response: Into<Response<B>> + 'static,
    <S::Service as actix_service::Service<Request>>::Future: 'static,
    S::Service: 'static,
    B: MessageBody + 'static,
{
    let address: SocketAddr = listener.local_addr()?;
    let ServerOptions {
        workers,
        max_connections,
        client_request_timeout,
        client_disconnect_timeout,
        keep_alive,
    } = options;
    let (opener, ready) = watch::channel(None::<T>);
    let (begin, draining) = watch::channel(false);
    let open = Arc::new(OpenConnections::default());
    let watched = Arc::downgrade(&open);
    super::give_back::watch(move || watched.upgrade().map(|open| open.burst_ended()))?;
    let (reported, arbiters) = std::sync::mpsc::channel::<ArbiterHandle>();
    let server_open = Arc::clone(&open);
    let mut server = Server::build()
        .workers(workers)
        // A backstop: the drain has let the connections end (docs/OPERATIONS.md, "Stop").
        .shutdown_timeout(SHUTDOWN_PATIENCE.as_secs())
        .max_concurrent_connections(hard_limit(max_connections))
        .disable_signals()
        .listen("botlist", listener, move || {
            // Runs on the worker's own thread as it starts. A worker started again later (one
            // whose thread died) reports to nobody: the receiver is gone by then.
            let _ = reported.send(Arbiter::current());
            let connections = Connections::new(max_connections);
            let shutdown = WorkerShutdown::start(draining.clone(), Rc::clone(&connections));
            let open = Arc::clone(&server_open);
            let ready = ready.clone();
            let factory = factory.clone();
            // The worker's HTTP service, made once the application is open.
            let http = Rc::new(tokio::sync::OnceCell::new());
            let make = Rc::new(move || {
                let mut ready = ready.clone();
                let factory = factory.clone();
                let shutdown = Rc::clone(&shutdown);
                async move {
                    let value = ready
                        .wait_for(Option::is_some)
                        .await
                        .map_err(|_| "the server stopped before it opened".to_owned())?
                        .clone()
                        .ok_or_else(|| "opened with nothing".to_owned())?;
                    let app = factory(&value)
                        .into_factory()
                        .map_err(|error| error.into().error_response());
                    // Each request keeps its connection busy until its response is made.
                    let app = apply_fn_factory(app, |request: Request, service: &_| {
                        let busy = request
                            .conn_data::<Rc<Activity>>()
                            .cloned()
                            .map(Busy::enter);
                        let call = Service::call(service, request);
                        async move {
                            let response = call.await;
                            drop(busy);
                            response
                        }
                    });
                    let stopping = Rc::clone(&shutdown);
                    HttpService::build()
                        .h1_write_buffer_size(STREAM_WRITE_BUFFER)
                        .keep_alive(KeepAlive::from(keep_alive))
                        .client_request_timeout(client_request_timeout)
                        .client_disconnect_timeout(client_disconnect_timeout)
                        .local_addr(address)
                        .graceful_shutdown_signal(move || Rc::clone(&shutdown).begun())
                        .on_connect_ext(move |io: &LimitedStream, data| {
                            data.insert(io.limit.clone());
                            data.insert(io.gone.clone());
                            data.insert(Rc::clone(&io.activity));
                            data.insert(Rc::clone(&stopping));
                        })
                        .finish(map_config(app, |_| AppConfig::default()))
                        .new_service(())
                        .await
                        .map_err(|()| "the HTTP service could not be made".to_owned())
                }
            });
            fn_service(move |io: TcpStream| {
                let (connections, open) = (Rc::clone(&connections), Arc::clone(&open));
                let (http, make) = (Rc::clone(&http), Rc::clone(&make));
                async move {
                    // An answer the dispatcher writes in two pieces (a head, then a body that
                    // was not ready with it) must not wait for the client's delayed ACK of the
                    // first (Nagle's algorithm: some 40 ms on a reused connection).
                    if let Err(error) = io.set_nodelay(true) {
                        tracing::debug!(%error, "TCP_NODELAY could not be set");
                    }
                    let peer = io.peer_addr().ok();
                    // Before the application opens, connections wait here (one `get` after).
                    let service = match http.get() {
                        Some(service) => service,
                        None => match http.get_or_try_init(|| make()).await {
                            Ok(service) => service,
                            Err(why) => {
                                tracing::error!(%why, "a connection was not served");
                                return Ok(());
                            }
                        },
                    };
                    let ready: Result<(), DispatchError> = std::future::poll_fn(|cx| {
                        Service::<(LimitedStream, Protocol, Option<SocketAddr>)>::poll_ready(
                            service, cx,
                        )
                    })
                    .await;
                    ready?;
                    let io = LimitedStream::accepted(io, connections, open);
                    service.call((io, Protocol::Http1, peer)).await
                }
            })
        })?
        .run();
    // The first poll starts the workers and returns once every one has made its service
    // (actix-server waits for their reports), then starts accepting.
    let first = std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut server).poll(cx))).await;
    if let Poll::Ready(ended) = first {
        return Err(ended
            .err()
            .unwrap_or_else(|| io::Error::other("the HTTP server ended as it started")));
    }
    let workers_started: Vec<ArbiterHandle> = arbiters.try_iter().collect();
    if workers_started.len() != workers {
        return Err(io::Error::other(format!(
            "{} of the {workers} HTTP workers started",
            workers_started.len()
        )));
    }
    Ok(Serving {
        server,
        workers: workers_started,
        opener: Opener(opener),
        drain: Drain { begin, open },
    })
}
