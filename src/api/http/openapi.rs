//! The OpenAPI 3.1 document, generated from the route declarations (`routes.rs`).
//!
//! Handlers list only what is particular to them: their success, and the errors only they give
//! (409, a 400 or a 404 that says more). [`complete`] adds the rest to every operation from
//! what its route is declared to be (`routes::Properties`): a token answers 401, a bot or
//! profile id 404 and a bot's own token 403, a body 408, 413 and 415, a rate limited route 429
//! and the `X-RateLimit-*` headers on every status, a tagged read its `ETag` and 304, an admin
//! route its token, its lockout and 404 when the server has no admin token; every route 400
//! (but health and metrics), 431 and 500, every write 503. The status and code of each come
//! from the error table (`error.rs`).

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{Operation, Parameter, ParameterBuilder, ParameterIn, Paths};
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{
    AllOfBuilder, AnyOfBuilder, ArrayBuilder, ObjectBuilder, Schema, Type,
};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr};
use utoipa::{Modify, OpenApi};

use actix_web::http::{Method, StatusCode};

use super::error::{self, Code};
use super::limits;
use super::routes::{Limit, Route, Subject};

const DESCRIPTION: &str = "\
A directory of chat-platform bots: search, votes, server-count stats and public profiles.

**Authentication.** Routes marked with a lock take the bot's API token (`token`) or the admin \
token (`admin_token`) as the raw value of the `Authorization` header, without a `Bearer` prefix. \
On public routes a token is never required; a valid one only changes the rate-limit key.

**Errors.** Every non-2xx answer except 429 is `{\"error\": {\"code\", \"message\"}}`; `code` is \
stable and safe to branch on, `message` names the parameter or field at fault. A method a path \
does not have answers 405 `method_not_allowed` with an `Allow` header listing the methods it has.

**Rate limits.** {rate_limits}: a burst of 60 (the \
operator's `--rate-limit`), one request back every 60/N seconds. Their responses carry \
`X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`; a refused request gets 429 \
with `Retry-After` and `{\"retry_after\": N}`, not the error envelope. The admin API is not \
limited.

**Bodies** are JSON objects sent with `Content-Type: application/json`, at most 64 KiB.

**HEAD** is answered on every GET route exactly as GET is (status, headers, `Content-Length`), \
without the body; it is not listed as an operation of its own.

**Caching.** {tagged} send an `ETag` with their 200; a request whose `If-None-Match` names it (or `*`) gets 304 with \
no body and the same headers, and still counts against the rate limit.

**Request ids.** Every response carries `X-Request-Id`: the client's own when it sent one of 1 \
to 128 visible ASCII characters, else one the server made up. The access log shows the same id.";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "botlist",
        description = DESCRIPTION,
        license(name = "MIT OR Apache-2.0")
    ),
    components(schemas(error::ErrorBody, error::ErrorDetail, error::ErrorCode, limits::RetryAfter, super::problem::ProblemDetails, crate::domain::webhook::VoteExpiredEvent)),
    tags(
        (name = "bots", description = "Search and read bots"),
        (name = "votes", description = "Voters and vote checks; a bot's API token"),
        (name = "stats", description = "Server counts"),
        (name = "users", description = "Public profiles"),
        (name = "admin", description = "Filling the directory; the admin token"),
        (name = "projects", description = "The project API of the 2026 client libraries: `Authorization: Bearer <the bot's API token>`, errors as RFC 9457 problem details"),
        (name = "operations", description = "Health and metrics, outside the base path"),
        (name = "staff", description = "Moderation: the queue of pending listings, decisions, certification, featuring, vote bans and the audit log; a `staff` profile token of a profile with `mod` or `admin` (the audit log also takes the admin token)"),
        (name = "owners", description = "Owners manage their own listings: submit, read the owner's view, edit, rotate the token, set co-owners, remove; a profile token of the `bots` scope held by an owner"),
        (name = "reviews", description = "A bot's reviews: public to read; written with a profile token (`reviews` scope), replied to by its owners (`bots`), removed by staff"),
        (name = "classic", description = "The classic surface, under `--classic-base-path` (default `/api`): the routes and shapes the released client libraries call, over the same data, tokens and limits"),
    )
)]
struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let raw_header = |description: &str| {
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "Authorization",
                description,
            )))
        };
        components.add_security_scheme(
            "token",
            raw_header("The bot's API token, raw, without a Bearer prefix"),
        );
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                utoipa::openapi::security::HttpBuilder::new()
                    .scheme(utoipa::openapi::security::HttpAuthScheme::Bearer)
                    .description(Some(
                        "The bot's API token, as `Bearer <token>` (the project API only)",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "admin_token",
            raw_header("The admin token the operator configured, raw, without a Bearer prefix"),
        );
        components.add_security_scheme(
            "profile_token",
            raw_header("A profile's token (`usr_...`, issued by `POST /admin/users/{id}/tokens`), raw, without a Bearer prefix"),
        );
    }
}

/// Declares the responses many operations share, each written once under
/// `components/responses` by its name: a row is the name, the row of the error table it is
/// (`None`: the rate limits' 429, which is not the envelope) and when a route gives it. The
/// status and the code come from the error table; [`Common::ALL`] and every `match` are made
/// from the rows, so a new shared response is one row.
macro_rules! shared_responses {
    ($(
        $(#[$doc:meta])*
        $name:ident = $code:expr, $when:literal;
    )*) => {
        #[derive(Clone, Copy)]
        enum Common {
            $($(#[$doc])* $name,)*
        }

        impl Common {
            const ALL: [Common; [$(Common::$name),*].len()] = [$(Common::$name),*];

            /// The row of the error table the response is; `None` for the rate limits' 429.
            fn code(self) -> Option<Code> {
                match self {
                    $(Self::$name => $code,)*
                }
            }

            fn name(self) -> &'static str {
                match self {
                    $(Self::$name => stringify!($name),)*
                }
            }

            /// When the route gives this answer.
            fn when(self) -> &'static str {
                match self {
                    $(Self::$name => $when,)*
                }
            }
        }
    };
}

shared_responses! {
    BadRequest = Some(Code::BadRequest),
        "a parameter or a body field is invalid, or the request could not be read";
    /// An admin body the route cannot read, unless the route says more.
    BadAdminBody = Some(Code::BadRequest),
        "the body is not a JSON object, a field is missing or invalid, or a field is unknown";
    Unauthorized = Some(Code::Unauthorized),
        "the token is missing, empty, unknown, or sent with a `Bearer` prefix";
    /// The bot in the path is not the token's own.
    OtherBot = Some(Code::Forbidden), "the token belongs to another bot";
    NoSuchBot = Some(Code::NotFound),
        "no listed bot has this id (or, on an admin route, the server has no admin token)";
    NoSuchProfile = Some(Code::NotFound),
        "no profile has this id (or, on an admin route, the server has no admin token)";
    NoAdminApi = Some(Code::NotFound), "the server has no admin token, so no admin API";
    RequestTimeout = Some(Code::RequestTimeout),
        "the body did not arrive in time after the headers";
    PayloadTooLarge = Some(Code::PayloadTooLarge), "the body is over 64 KiB";
    UnsupportedMediaType = Some(Code::UnsupportedMediaType),
        "the body was not sent as `application/json`";
    /// The rate limits' 429, which is not the envelope (no row of the table).
    TooManyRequests = None,
        "Rate limited: wait `retry_after` seconds (the same as `Retry-After`). Not the error envelope";
    /// An address locked out after failed admin authentications: the envelope.
    LockedOut = Some(Code::TooManyRequests),
        "10 failed admin authentications from this address within a minute; every admin request from it is refused until `Retry-After` seconds have passed";
    HeadersTooLarge = Some(Code::HeadersTooLarge),
        "the request headers are over 16 KiB together";
    NotAcceptable = Some(Code::NotAcceptable),
        "`Accept-Encoding` refuses every encoding offered (`identity;q=0` and no `br`, `gzip` or `deflate`)";
    InternalError = Some(Code::Internal), "a bug; the message tells nothing of internals";
    Unavailable = Some(Code::Unavailable),
        "the write could not be made durable, or the server is shutting down";
}

impl Common {
    fn status(self) -> StatusCode {
        self.code()
            .map_or(StatusCode::TOO_MANY_REQUESTS, |code| code.row().status)
    }

    fn description(self) -> String {
        match self.code() {
            Some(code) => format!("`{}`: {}", code.row().code, self.when()),
            None => self.when().to_owned(),
        }
    }

    fn response(self) -> Response {
        let body = match self {
            Self::TooManyRequests => "RetryAfter",
            _ => "ErrorBody",
        };
        let mut response = json_response(self.description(), body);
        add_request_id_header(&mut response);
        match self {
            Self::TooManyRequests => {
                response.headers.insert(
                    "Retry-After".into(),
                    integer_header("Whole seconds to wait, at least 1; the same as `retry_after`"),
                );
                add_rate_limit_headers(&mut response);
            }
            Self::LockedOut => {
                response.headers.insert(
                    "Retry-After".into(),
                    integer_header("Whole seconds until the address may try again, at least 1"),
                );
            }
            _ => {}
        }
        response
    }

    fn reference(self) -> RefOr<Response> {
        RefOr::Ref(Ref::new(format!("#/components/responses/{}", self.name())))
    }
}

/// A problem-details response (the project API's errors).
fn problem_response(description: String) -> Response {
    ResponseBuilder::new()
        .description(description)
        .content(
            super::problem::PROBLEM_JSON,
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ProblemDetails")))
                .build(),
        )
        .build()
}

/// A response with a JSON body of the schema `body`.
fn json_response(description: String, body: &str) -> Response {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name(body)))
                .build(),
        )
        .build()
}

fn integer_header(description: &str) -> utoipa::openapi::header::Header {
    HeaderBuilder::new()
        .schema(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(0)),
        )
        .description(Some(description))
        .build()
}

fn string_header(description: &str) -> utoipa::openapi::header::Header {
    HeaderBuilder::new()
        .schema(ObjectBuilder::new().schema_type(Type::String))
        .description(Some(description))
        .build()
}

fn header_parameter(name: &str, description: &str) -> Parameter {
    string_parameter(name, ParameterIn::Header, description)
}

/// A string parameter, required in the path, optional elsewhere.
fn string_parameter(name: &str, place: ParameterIn, description: &str) -> Parameter {
    let required = match place {
        ParameterIn::Path => utoipa::openapi::Required::True,
        _ => utoipa::openapi::Required::False,
    };
    ParameterBuilder::new()
        .name(name)
        .parameter_in(place)
        .required(required)
        .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
        .description(Some(description))
        .build()
}

const REQUEST_ID: &str = "X-Request-Id";

/// Every response says which request it answers.
fn add_request_id_header(response: &mut Response) {
    response.headers.insert(
        REQUEST_ID.into(),
        string_header("The request's id: the client's own if it sent a sane one, else a new one"),
    );
}

/// The reads that carry an `ETag`: `If-None-Match` in, the tag on the 200, and a 304.
fn add_etag(operation: &mut Operation) {
    operation
        .parameters
        .get_or_insert_with(Vec::new)
        .push(header_parameter(
            "If-None-Match",
            "ETags the client holds (or `*`): if one matches, the answer is 304 with no body",
        ));
    if let Some(RefOr::T(ok)) = operation.responses.responses.get_mut("200") {
        ok.headers.insert(
            "ETag".into(),
            string_header("A strong validator of the body (weak once compressed); send it back in `If-None-Match`"),
        );
    }
    let mut not_modified = ResponseBuilder::new()
        .description("Not modified: `If-None-Match` named the current `ETag`. No body; the headers of the 200")
        .build();
    not_modified.headers.insert(
        "ETag".into(),
        string_header("The current ETag, the one that matched"),
    );
    operation
        .responses
        .responses
        .insert("304".into(), RefOr::T(not_modified));
}

/// The headers every response of a rate-limited route carries while limits are on.
fn add_rate_limit_headers(response: &mut Response) {
    let headers = [
        (
            "X-RateLimit-Limit",
            "The burst: requests a full bucket allows (sent while limits are on)",
        ),
        (
            "X-RateLimit-Remaining",
            "Requests left in the bucket now (sent while limits are on)",
        ),
        (
            "X-RateLimit-Reset",
            "Whole seconds until the bucket is full again (sent while limits are on)",
        ),
    ];
    for (name, description) in headers {
        response
            .headers
            .insert(name.into(), integer_header(description));
    }
}

/// A stats post needs `server_count`, or else `shards` as an array: a rule across two fields,
/// which a field's own schema cannot say.
struct StatsPostNeedsACount;

impl Modify for StatsPostNeedsACount {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let Some(post) = components.schemas.remove("StatsPost") else {
            return;
        };
        let shards_as_array = ObjectBuilder::new()
            .required("shards")
            .property("shards", ArrayBuilder::new());
        let a_count = AnyOfBuilder::new()
            .item(ObjectBuilder::new().required("server_count"))
            .item(shards_as_array);
        let all = AllOfBuilder::new().item(post).item(a_count).build();
        components
            .schemas
            .insert("StatsPost".into(), RefOr::T(Schema::AllOf(all)));
    }
}

/// Adds to a route's operation what it has from what the route is ([`Properties`]): a token
/// answers 401, a bot or profile id 404 and the bot's own token 403, a body 408, 413 and 415, a
/// rate limited route 429 and the `X-RateLimit-*` headers on every status, a tagged read its
/// `ETag`, an admin route the admin token, its lockout and 404 when the server has no admin
/// token; every route 431 and 500 and, but for the operational ones, 400; every write 503.
pub fn complete(route: &Route, operation: &mut Operation) {
    let properties = &route.properties;
    let write = route.method != Method::GET;
    if let Some(subject) = properties.subject {
        name_the_subject(&route.path, subject, operation);
    }
    secure(properties, operation);
    let mut common = common_responses(properties, write, operation);
    operation
        .parameters
        .get_or_insert_with(Vec::new)
        .push(header_parameter(
            REQUEST_ID,
            "An id for this request, echoed in the response and the log when it is 1 to 128 visible ASCII characters (else one is made up)",
        ));
    if properties.etag && !write {
        add_etag(operation);
    }
    let limited = properties.limit.is_some();
    if limited {
        common.push(Common::TooManyRequests);
    }
    let responses = &mut operation.responses.responses;
    for (code, when) in &route.refusals {
        let row = code.row();
        let said = format!("`{}`: {when}", row.code);
        match responses.get_mut(row.status.as_str()) {
            // Two codes of one status (409 `conflict` and `already_voted`) share the response.
            Some(RefOr::T(known)) => known.description = format!("{}; {said}", known.description),
            _ => {
                responses.insert(
                    row.status.as_str().into(),
                    RefOr::T(json_response(said, "ErrorBody")),
                );
            }
        }
    }
    for response in responses.values_mut() {
        if let RefOr::T(response) = response {
            add_request_id_header(response);
        }
    }
    for c in common {
        let entry = responses.entry(c.status().as_str().into());
        if properties.project {
            // The project API answers its errors as problem details, never the envelope.
            entry.or_insert_with(|| {
                let mut response = problem_response(c.description());
                add_request_id_header(&mut response);
                RefOr::T(response)
            });
        } else {
            entry.or_insert_with(|| c.reference());
        }
    }
    if properties.project {
        // The project API's 429 (its rate limit, or the 4-hour announcement rule) is a problem
        // with `Retry-After`, which topggpy 2.0.0 reads.
        if let Some(RefOr::T(too_many)) = responses.get_mut("429") {
            too_many.headers.insert(
                "Retry-After".into(),
                integer_header("Whole seconds to wait, at least 1"),
            );
        }
    }
    if limited {
        add_rate_limit_headers_to_all(responses);
    }
}

/// The token a route takes, if any: the admin token for an admin route.
fn secure(properties: &super::routes::Properties, operation: &mut Operation) {
    if properties.token {
        operation.security = Some(vec![SecurityRequirement::new(
            "token",
            Vec::<String>::new(),
        )]);
    }
    if properties.admin {
        operation.security = Some(vec![SecurityRequirement::new(
            "admin_token",
            Vec::<String>::new(),
        )]);
    }
}

/// The shared responses a route gives from what it is, but 429 (added with the rate limit's
/// headers): in this order, since the first of one status is the one documented.
fn common_responses(
    properties: &super::routes::Properties,
    write: bool,
    operation: &Operation,
) -> Vec<Common> {
    let mut common = Vec::new();
    if properties.admin {
        common.push(Common::LockedOut);
        if operation.request_body.is_some() {
            common.push(Common::BadAdminBody);
        }
    }
    common.extend([
        Common::HeadersTooLarge,
        Common::NotAcceptable,
        Common::InternalError,
    ]);
    if !properties.operational {
        common.push(Common::BadRequest);
    }
    if operation.security.as_ref().is_some_and(|s| !s.is_empty()) {
        common.push(Common::Unauthorized);
    }
    match properties.subject {
        Some(Subject::Bot) => common.push(Common::NoSuchBot),
        Some(Subject::Profile) => common.push(Common::NoSuchProfile),
        None if properties.admin => common.push(Common::NoAdminApi),
        None => {}
    }
    if properties.own_bot {
        common.push(Common::OtherBot);
    }
    if operation.request_body.is_some() {
        common.extend([
            Common::RequestTimeout,
            Common::PayloadTooLarge,
            Common::UnsupportedMediaType,
        ]);
    }
    if write {
        common.push(Common::Unavailable);
    }
    common
}

/// The rate limit's headers on every response of a limited route. A reference cannot take
/// headers, so limited routes hold their own copies.
fn add_rate_limit_headers_to_all(
    responses: &mut std::collections::BTreeMap<String, RefOr<Response>>,
) {
    for response in responses.values_mut() {
        let mut inline = match response {
            RefOr::T(response) => response.clone(),
            RefOr::Ref(reference) => Common::ALL
                .into_iter()
                .find(|c| reference.ref_location.ends_with(&format!("/{}", c.name())))
                .map(Common::response)
                .unwrap_or_else(|| Response::new("")),
        };
        add_rate_limit_headers(&mut inline);
        *response = RefOr::T(inline);
    }
}

/// The path parameter that names the route's bot or profile (its first), first of the
/// operation's parameters.
fn name_the_subject(path: &str, subject: Subject, operation: &mut Operation) {
    let Some(name) = path
        .split('/')
        .find_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
    else {
        return;
    };
    let description = match subject {
        Subject::Bot => "Listing UUID (any case) or platform snowflake",
        Subject::Profile => "Profile UUID (any case)",
    };
    let parameters = operation.parameters.get_or_insert_with(Vec::new);
    parameters.retain(|p| !(p.name == name && p.parameter_in == ParameterIn::Path));
    parameters.insert(0, string_parameter(name, ParameterIn::Path, description));
}

/// The items with `, ` between them, and `and` (after `, ` or ` `) before the last.
fn listed(items: &[String], and: &str) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [first @ .., last] => format!("{}{and}{last}", first.join(", ")),
    }
}

/// The operations of one path.
fn operations(item: &mut utoipa::openapi::PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.delete,
        &mut item.patch,
    ]
    .into_iter()
    .filter_map(Option::as_mut)
}

/// An operation of the classic surface: tagged `classic`, and its id prefixed so that the
/// base's routes it shares keep ids of their own.
fn classic_operation(operation: &mut Operation) {
    operation.tags = Some(vec!["classic".into()]);
    if let Some(id) = &mut operation.operation_id {
        if !id.starts_with("classic_") {
            *id = format!("classic_{id}");
        }
    }
}

/// The description, with what it says of the routes' rate limits and `ETag`s made from their
/// declarations.
fn description(routes: &[Route]) -> String {
    let mut limits: Vec<(Limit, Vec<&str>)> = Vec::new();
    for route in routes {
        if let Some(limit) = route.properties.limit {
            match limits.iter_mut().find(|(known, _)| *known == limit) {
                Some((_, paths)) => paths.push(&route.path),
                None => limits.push((limit, vec![&route.path])),
            }
        }
    }
    let limits: Vec<String> = limits
        .into_iter()
        .map(|(limit, paths)| match paths[..] {
            [path] => format!("`{path}` has a bucket per {}", limit.keyed_by()),
            _ => format!(
                "Every route under `{}` shares one bucket per {}",
                super::routes::common_scope(paths),
                limit.keyed_by()
            ),
        })
        .collect();
    let tagged: Vec<String> = routes
        .iter()
        .filter(|route| route.properties.etag && route.method == Method::GET)
        .map(|route| format!("`GET {}`", route.path))
        .collect();
    DESCRIPTION
        .replace("{rate_limits}", &listed(&limits, ", and "))
        .replace("{tagged}", &listed(&tagged, " and "))
}

/// The document of the routes the router serves (see [`super::routes`]), the API's under
/// `base_path`, the classic surface's under `classic_base_path` (none when it is empty or the
/// base path).
pub fn document(base_path: &str, classic_base_path: &str) -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    let mut paths = Paths::new();
    let mut schemas = Vec::new();
    let routes: Vec<Route> = crate::api::root_routes()
        .into_iter()
        .chain(crate::api::api_routes())
        .collect();
    for route in &routes {
        route.document(base_path, &mut paths, &mut schemas);
    }
    if !classic_base_path.is_empty() && classic_base_path != base_path {
        let mut classic = Paths::new();
        for route in crate::api::classic_routes() {
            route.document(classic_base_path, &mut classic, &mut schemas);
        }
        for (path, mut item) in classic.paths {
            for operation in operations(&mut item) {
                classic_operation(operation);
            }
            paths.paths.insert(path, item);
        }
    }
    doc.info.description = Some(description(&routes));
    doc.paths = paths;
    let components = doc.components.get_or_insert_with(Default::default);
    for (name, schema) in schemas {
        components.schemas.entry(name).or_insert(schema);
    }
    for common in Common::ALL {
        components
            .responses
            .insert(common.name().into(), RefOr::T(common.response()));
    }
    for modifier in [&Security as &dyn Modify, &StatsPostNeedsACount] {
        modifier.modify(&mut doc);
    }
    doc
}
