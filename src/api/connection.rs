//! The HTTP server's connections, with two additions to actix-web's: after a body is refused as
//! too large, the connection reads at most [`READ_AFTER_REFUSAL`] more bytes, then ends; and a
//! connection notes when its client has gone ([`PeerGone`]), for the vote streams.
//!
//! actix-http answers an early response and then goes on reading: it lingers on a connection
//! whose body was not read (a `Content-Length` body: up to `client_disconnect_timeout`, some
//! 95 MiB on loopback in one second) and drains a chunked body to its end, however long. A client
//! that sends 10 GiB after its 413 would be read to the last byte. Here the stream itself reports
//! end of input once the budget is spent, so actix-http closes the connection.

use std::cell::Cell;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_http::{HttpService, KeepAlive, Protocol, Request, Response};
use actix_server::Server;
use actix_service::{
    fn_service, map_config, IntoServiceFactory, ServiceFactory, ServiceFactoryExt,
};
use actix_web::body::MessageBody;
use actix_web::dev::AppConfig;
use actix_web::rt::net::TcpStream;
use actix_web::HttpRequest;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

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

/// A TCP stream that honours its [`ReadLimit`] and notes when its client has gone.
pub struct LimitedStream {
    io: TcpStream,
    limit: ReadLimit,
    gone: PeerGone,
}

impl AsyncRead for LimitedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let Some(left) = this.limit.0.get() else {
            let before = buf.filled().len();
            let read = Pin::new(&mut this.io).poll_read(cx, buf);
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
    /// Per worker.
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

/// Serves `factory`'s app on `listener` as `HttpServer` would (HTTP/1, graceful stop, no signal
/// handling of its own), over [`LimitedStream`] connections.
pub fn serve<F, I, S, B>(
    listener: TcpListener,
    options: ServerOptions,
    factory: F,
) -> io::Result<Server>
where
    F: Fn() -> I + Send + Clone + 'static,
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
    let builder = Server::build();
    let shutdown = builder.graceful_shutdown_signal();
    let ServerOptions {
        workers,
        max_connections,
        client_request_timeout,
        client_disconnect_timeout,
        keep_alive,
    } = options;
    Ok(builder
        .workers(workers)
        .max_concurrent_connections(max_connections)
        .disable_signals()
        .listen("botlist", listener, move || {
            let shutdown = shutdown.clone();
            let app = factory()
                .into_factory()
                .map_err(|error| error.into().error_response());
            let http = HttpService::build()
                .h1_write_buffer_size(STREAM_WRITE_BUFFER)
                .keep_alive(KeepAlive::from(keep_alive))
                .client_request_timeout(client_request_timeout)
                .client_disconnect_timeout(client_disconnect_timeout)
                .local_addr(address)
                .graceful_shutdown_signal(move || {
                    let shutdown = shutdown.clone();
                    async move { shutdown.notified().await }
                })
                .on_connect_ext(|io: &LimitedStream, data| {
                    data.insert(io.limit.clone());
                    data.insert(io.gone.clone());
                })
                .finish(map_config(app, |_| AppConfig::default()));
            fn_service(|io: TcpStream| async move {
                let peer = io.peer_addr().ok();
                let stream = LimitedStream {
                    io,
                    limit: ReadLimit::default(),
                    gone: PeerGone::default(),
                };
                Ok((stream, Protocol::Http1, peer))
            })
            .and_then(http)
        })?
        .run())
}
