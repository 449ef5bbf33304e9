//! The live vote feed: a bot's votes as Server-Sent Events, from the `Last-Event-ID` on.

use std::sync::Arc;
use std::task::Poll;

use actix_web::http::header::{HeaderValue, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE};
use actix_web::http::StatusCode;
use actix_web::web;
use actix_web::{HttpRequest, HttpResponse};
use futures_util::Stream as _;
use utoipa::openapi::path::Operation;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::RefOr;

use super::feed::Feed;
use super::VoteEntry;
use crate::actors::bot::OpenStream;
use crate::actors::directory::BotHandle;
use crate::api::connection::{Busy, PeerGone, Stopping};
use crate::api::error::{ApiError, Code};
use crate::api::extract::OwnBot;
use crate::api::layer::Head;
use crate::api::limits::RetryAfter;
use crate::api::{reply, AppState};
use crate::telemetry;

/// The bot's votes as Server-Sent Events, as they are accepted (its own token).
///
/// Each accepted vote is one `vote` event whose `id` is the vote's position in the bot's
/// history and whose `data` is the history entry. A comment line is sent every 15 s when no
/// vote is. Reconnect with `Last-Event-ID` to get every vote after that id from history first,
/// then live ones. A reader too slow for the votes is sent an `overflow` event and the stream
/// ends; it reconnects with its last id. Past the bot's limit of open streams (5 unless the
/// operator sets `--max-streams-per-bot`) the answer is 429 with `Retry-After`, as for a rate limit.
/// The events the bot chose with `webhook_events` besides votes (`vote.expired`,
/// `review.create`, `listing.approved`, `listing.denied`, `listing.delisted`) come too, as
/// `event: <kind>` with the webhook body's `data` and no `id`, live only, in order with the votes.
#[utoipa::path(
    get, path = "/bots/{id}/votes/stream", tag = "votes",
    params(
        ("Last-Event-ID" = Option<u64>, Header, description = "The id of the last event received: the stream starts with the votes after it. Without it, the stream starts with the next vote"),
    ),
    responses(
        (status = 200, description = "A `text/event-stream` of `vote` events (data: a history entry) and, last, possibly one `overflow` event", content_type = "text/event-stream", body = VoteEntry),
    )
)]
pub async fn stream(
    bot: OwnBot,
    state: web::Data<AppState>,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    open_stream(bot.0, &state, &request).await
}

/// The stream's OpenAPI entry: `Last-Event-ID` is a vote's id (digits), and each Server-Sent
/// Event is an object of its `event`, `id` and `data` lines, `data` holding the history entry as
/// JSON.
pub(super) fn stream_events(get: &mut Operation) {
    for parameter in get.parameters.iter_mut().flatten() {
        if parameter.name == "Last-Event-ID" {
            parameter.schema = Some(RefOr::T(Schema::Object(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some("^[0-9]*$"))
                    .build(),
            )));
        }
    }
    let event = ObjectBuilder::new()
        .property(
            "event",
            ObjectBuilder::new()
                .schema_type(Type::String)
                // The events a bot may choose that the stream carries too: the table says which.
                .enum_values(Some(
                    ["vote", "overflow"].into_iter().chain(
                        crate::domain::webhook::Event::ALL
                            .iter()
                            .filter(|event| event.on_stream())
                            .map(|event| event.name()),
                    ),
                )),
        )
        .property(
            "id",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some("^[0-9]+$"))
                .description(Some("A vote's position in the bot's history")),
        )
        .property(
            "data",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some(
                    "For `vote`: the vote as a history entry (`VoteEntry`) in JSON; for \
                 `overflow`: `{\"message\": ...}`",
                )),
        )
        .required("data")
        .build();
    if let Some(RefOr::T(ok)) = get.responses.responses.get_mut("200") {
        if let Some(content) = ok.content.get_mut("text/event-stream") {
            content.schema = Some(RefOr::T(Schema::Object(event)));
        }
    }
}

/// The last thing a stream sends when the server stops: a comment (SSE clients skip it) and the
/// end of the response. A client that reconnects with its last id gets every vote it missed.
const STOPPING: &[u8] =
    b": the server is stopping; reconnect with Last-Event-ID set to the last id received\n\n";

/// Seconds a client refused for too many streams is told to wait.
const STREAM_RETRY_AFTER: u64 = 5;

async fn open_stream(
    bot: Arc<BotHandle>,
    state: &AppState,
    request: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    // Digits only, as the schema says; a number past u64 is past every vote there will be.
    let last = match request.headers().get("last-event-id").map(|v| v.to_str()) {
        None => None,
        Some(Ok(text)) if text.trim().is_empty() => None,
        Some(Ok(text)) if text.trim().bytes().all(|b| b.is_ascii_digit()) => {
            Some(text.trim().parse::<u64>().unwrap_or(u64::MAX))
        }
        Some(text) => {
            let shown: String = text.unwrap_or("").chars().take(40).collect();
            return Err(Code::BadRequest.with(format!(
                "Last-Event-ID must be the id of a vote event (a whole number), got `{shown}`"
            )));
        }
    };
    // A HEAD gets the headers a stream would, and no stream: it would never end, and would
    // hold one of the bot's places while it did not.
    if Head::asked(request) {
        return Ok(stream_head().finish());
    }
    let settings = &state.history.settings;
    let Some(slot) = bot.ask(OpenStream(settings.max_streams_per_bot)).await? else {
        let mut response = reply::json(
            StatusCode::TOO_MANY_REQUESTS,
            &RetryAfter {
                retry_after: STREAM_RETRY_AFTER,
            },
        );
        response.headers_mut().insert(
            actix_web::http::header::RETRY_AFTER,
            STREAM_RETRY_AFTER.into(),
        );
        return Ok(response);
    };
    let mut body = Box::pin(Feed::open(bot, slot, last, settings).chunks());
    // The connection polls its body again whenever it reads, the end of the client's input
    // included: a stream whose client has left ends then, not at its next write.
    let gone = PeerGone::of(request);
    // A connection with a stream open is never closed to make room for a new client.
    let busy = Busy::of(request);
    // A stop ends the stream with a last comment, so that the stop does not wait for it and
    // the client reconnects (to this server once it is back, or another) with its last id.
    let mut stopping = Stopping::of(request);
    let mut said_goodbye = false;
    // Votes of history rendered in this poll of the connection: after a page of them the
    // stream yields, so that a replay of any length costs one page per poll, and the next page
    // is rendered once the connection has written this one and polls again.
    let mut replayed = 0;
    let body = futures_util::stream::poll_fn(move |cx| {
        let _busy = &busy;
        if gone.is_gone() || said_goodbye {
            return Poll::Ready(None);
        }
        if stopping.poll_begun(cx) {
            said_goodbye = true;
            return Poll::Ready(Some(Ok(web::Bytes::from_static(STOPPING))));
        }
        if replayed > 0 {
            telemetry::stream_replay_poll(std::mem::take(&mut replayed));
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        match body.as_mut().poll_next(cx) {
            Poll::Ready(Some(chunk)) => {
                replayed = chunk.replayed;
                Poll::Ready(Some(Ok::<_, std::convert::Infallible>(chunk.bytes)))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    });
    Ok(stream_head().streaming(body))
}

/// The head of a stream's answer.
fn stream_head() -> actix_web::HttpResponseBuilder {
    let mut head = HttpResponse::Ok();
    head.insert_header((CONTENT_TYPE, HeaderValue::from_static("text/event-stream")))
        .insert_header((CACHE_CONTROL, HeaderValue::from_static("no-store")))
        // Not compressed: a compressor holds back what it has until it has enough.
        .insert_header((CONTENT_ENCODING, HeaderValue::from_static("identity")))
        .insert_header(("x-accel-buffering", HeaderValue::from_static("no")));
    head
}
