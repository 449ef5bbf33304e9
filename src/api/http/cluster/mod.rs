//! Cluster mode's HTTP machinery: `X-Botlist-Seq` on every response under the base path,
//! waiting reads (`X-Botlist-Min-Seq` / `min_seq`), and, on a node that follows, writes
//! forwarded to the writer. Its routes are a resource (`resources/cluster.rs`).

pub mod forward;
mod middleware;

use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::ServiceRequest;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{web, HttpResponse};

use crate::cluster::view::ClusterView;
use crate::domain::ids::TokenHash;
use forward::Forwarder;
pub use middleware::{Consistency, ForwardWrites};

pub const SEQ_HEADER: &str = "x-botlist-seq";
pub const MIN_SEQ_HEADER: &str = "x-botlist-min-seq";
/// On every response under the base path: how far behind the stream this node may be (ms).
pub const LAG_HEADER: &str = "x-botlist-lag-ms";
/// A read that sends `X-Botlist-Allow-Stale: true` is answered however far behind the node is.
pub const ALLOW_STALE_HEADER: &str = "x-botlist-allow-stale";
/// The names above, made once: a name made from a string on every request is parsed (and
/// compared with every standard header's) on every request.
const SEQ: HeaderName = HeaderName::from_static(SEQ_HEADER);
const MIN_SEQ: HeaderName = HeaderName::from_static(MIN_SEQ_HEADER);
const LAG: HeaderName = HeaderName::from_static(LAG_HEADER);
/// The header a follower puts on a forwarded write.
pub const TOKEN_HEADER: &str = "X-Botlist-Cluster-Token";

/// What the writer's HTTP layer needs of the cluster.
pub struct ClusterHttp {
    pub view: Arc<ClusterView>,
    pub base_path: String,
    /// The classic surface's prefix (empty: none). Its reads are as stale as the base path's
    /// and are stamped and bounded alike: the released SDKs read through it.
    pub classic_base_path: String,
    /// Pulled by `step-down`: the node hands the lease back and exits.
    pub step_down: tokio::sync::mpsc::UnboundedSender<()>,
    /// The hash of `--cluster-token`, which nodes put on the requests they forward.
    pub token: TokenHash,
    /// Sends writes to the writer while this node follows.
    pub forwarder: Arc<Forwarder>,
    /// How long a read with `X-Botlist-Min-Seq` waits (`--min-seq-wait-ms`).
    pub min_seq_wait: Duration,
    /// Past this lag, reads answer 503 `replica_behind` unless stale reads are allowed
    /// (`--max-lag-ms`).
    pub max_lag: Duration,
}

impl ClusterHttp {
    /// Whether `path` is under one of the API's surfaces, whose answers say how far this node is.
    pub fn serves(&self, path: &str) -> bool {
        crate::api::under(path, &self.base_path)
            || (!self.classic_base_path.is_empty()
                && crate::api::under(path, &self.classic_base_path))
    }
}

/// Whether another node of the cluster forwarded this request (it carries the cluster token).
pub fn forwarded_by_a_node(request: &ServiceRequest) -> bool {
    let Some(cluster) = request.app_data::<web::Data<ClusterHttp>>() else {
        return false;
    };
    request
        .headers()
        .get(TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|presented| cluster.token.matches(&TokenHash::of(presented)))
}

/// `response`, saying how far this node is.
fn with_seq(mut response: HttpResponse, view: &ClusterView) -> HttpResponse {
    response
        .headers_mut()
        .insert(SEQ, HeaderValue::from(view.applied_seq()));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::view::NodeRole;
    use actix_web::test::TestRequest;

    pub(super) fn cluster() -> web::Data<ClusterHttp> {
        web::Data::new(ClusterHttp {
            view: ClusterView::new("a".into(), NodeRole::Writer),
            base_path: "/api/v1".into(),
            classic_base_path: "/api".into(),
            step_down: tokio::sync::mpsc::unbounded_channel().0,
            token: TokenHash::of("secret"),
            min_seq_wait: Duration::from_secs(1),
            max_lag: Duration::from_secs(8),
            forwarder: Arc::new(
                Forwarder::new(
                    ClusterView::new("a".into(), NodeRole::Writer),
                    crate::config::Secret::from("secret"),
                    Duration::from_secs(15),
                )
                .expect("a client"),
            ),
        })
    }

    #[test]
    fn a_forwarded_request_is_limited_by_the_client_the_node_names() {
        use super::super::limits::{client_ip, ClientAddress};
        let forwarded = |token: Option<&str>| {
            let mut request = TestRequest::default()
                .app_data(cluster())
                .peer_addr("10.0.0.2:5000".parse().unwrap())
                .insert_header(("X-Forwarded-For", "203.0.113.7"));
            if let Some(token) = token {
                request = request.insert_header((TOKEN_HEADER, token));
            }
            request.to_srv_request()
        };
        let with_token = forwarded(Some("secret"));
        assert!(forwarded_by_a_node(&with_token));
        assert_eq!(
            client_ip(
                with_token.request(),
                ClientAddress::of(ClientAddress::Peer, &with_token)
            ),
            "203.0.113.7".parse::<std::net::IpAddr>().unwrap()
        );
        // A wrong token or none: the peer, whatever the header says.
        for request in [forwarded(Some("guess")), forwarded(None)] {
            assert!(!forwarded_by_a_node(&request));
            assert_eq!(
                client_ip(
                    request.request(),
                    ClientAddress::of(ClientAddress::Peer, &request)
                ),
                "10.0.0.2".parse::<std::net::IpAddr>().unwrap()
            );
        }
    }
}
