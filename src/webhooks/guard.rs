//! The guard against webhooks aimed at private networks (SSRF): checked when a URL is set and
//! again at every delivery, since what a name resolves to can change.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Loopback, private, shared (CGNAT), link-local, unspecified, multicast, broadcast, documentation
/// and other special-purpose addresses (IPv4-translated and Teredo IPv6 among them): nowhere a
/// public receiver lives.
pub fn is_forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (b == 18 || b == 19))
                || (a == 192 && b == 0 && v4.octets()[2] == 0)
                || a >= 240
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_forbidden(IpAddr::V4(v4));
            }
            let seg = v6.segments();
            let embedded_v4 = |hi: u16, lo: u16| {
                std::net::Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)
            };
            // IPv4-compatible (::a.b.c.d, deprecated but still routed by some stacks).
            if seg[..6] == [0; 6] && !v6.is_loopback() && !v6.is_unspecified() {
                return is_forbidden(IpAddr::V4(embedded_v4(seg[6], seg[7])));
            }
            // 6to4 carries an IPv4 address in its second and third groups.
            if seg[0] == 0x2002 && is_forbidden(IpAddr::V4(embedded_v4(seg[1], seg[2]))) {
                return true;
            }
            // IPv4-translated (::ffff:0:a.b.c.d, RFC 2765/6052's SIIT form) reaches IPv4 through a
            // translator, and Teredo (2001::/32) tunnels to an IPv4 address inside it: neither
            // is where a public receiver lives, and both can hide a private IPv4 target.
            let translated = seg[..4] == [0; 4] && seg[4] == 0xffff && seg[5] == 0;
            let teredo = seg[0] == 0x2001 && seg[1] == 0;
            translated
                || teredo
                || v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (seg[0] & 0xfe00) == 0xfc00
                || (seg[0] & 0xffc0) == 0xfe80
                || (seg[0] & 0xffc0) == 0xfec0
                || (seg[0] == 0x2001 && seg[1] == 0x0db8)
                || (seg[0] == 0x0064 && seg[1] == 0xff9b)
        }
    }
}

/// Checks a URL being set: an IP literal in a forbidden range, `localhost`, or a name that
/// resolves to a forbidden address is refused. A name that does not resolve now is accepted;
/// delivery checks again.
pub async fn check_url(url: &str, allow_private: bool) -> Result<(), String> {
    if allow_private {
        return Ok(());
    }
    let parsed = url::Url::parse(url).map_err(|e| format!("is not a URL ({e})"))?;
    let host = parsed.host().ok_or("must name a host")?;
    let port = parsed.port_or_known_default().unwrap_or(443);
    let name = match host {
        url::Host::Ipv4(v4) => return refuse_if(IpAddr::V4(v4)),
        url::Host::Ipv6(v6) => return refuse_if(IpAddr::V6(v6)),
        url::Host::Domain(name) => name.to_ascii_lowercase(),
    };
    if name == "localhost" || name.ends_with(".localhost") {
        return Err("must not point at this machine (localhost)".into());
    }
    let lookup = tokio::net::lookup_host((name.as_str(), port));
    if let Ok(Ok(addresses)) = actix_web::rt::time::timeout(Duration::from_secs(2), lookup).await {
        for address in addresses {
            refuse_if(address.ip())?;
        }
    }
    Ok(())
}

fn refuse_if(ip: IpAddr) -> Result<(), String> {
    if is_forbidden(ip) {
        Err(format!(
            "resolves to {ip}, a loopback, private, link-local or otherwise non-public address"
        ))
    } else {
        Ok(())
    }
}

/// The resolver of the delivery client: drops forbidden addresses, so a name that now resolves
/// to one fails to connect instead of reaching a private service.
pub struct GuardedResolver {
    pub allow_private: bool,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        Box::pin(async move {
            let found = tokio::net::lookup_host((name.as_str(), 0)).await?;
            let allowed: Vec<SocketAddr> = found
                .filter(|address| allow_private || !is_forbidden(address.ip()))
                .collect();
            if allowed.is_empty() {
                let error: Box<dyn std::error::Error + Send + Sync> = format!(
                    "{} resolves only to private or non-public addresses",
                    name.as_str()
                )
                .into();
                return Err(error);
            }
            let addrs: Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

pub fn resolver(allow_private: bool) -> Arc<GuardedResolver> {
    Arc::new(GuardedResolver { allow_private })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_special_addresses_are_forbidden() {
        for bad in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "100.64.0.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
        ] {
            assert!(is_forbidden(bad.parse().expect("an address")), "{bad}");
        }
        for good in ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"] {
            assert!(!is_forbidden(good.parse().expect("an address")), "{good}");
        }
    }

    /// One address of each range, as a literal URL when it is set and as what a name resolves
    /// to at delivery.
    const TRANSLATED_AND_TEREDO: [&str; 4] = [
        // 127.0.0.1 in the IPv4-translated form, and 8.8.8.8: the whole ::ffff:0:0:0/96.
        "::ffff:0:7f00:1",
        "::ffff:0:808:808",
        // Teredo: a server and an obfuscated client address; the whole 2001::/32.
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",
        "2001::1",
    ];

    #[test]
    fn ipv4_translated_and_teredo_addresses_are_forbidden() {
        for bad in TRANSLATED_AND_TEREDO {
            assert!(is_forbidden(bad.parse().expect("an address")), "{bad}");
        }
        // Neighbours that are public stay allowed.
        for good in ["2001:4860:4860::8888", "2001:1::1", "::ffff:1:7f00:1"] {
            assert!(!is_forbidden(good.parse().expect("an address")), "{good}");
        }
    }

    #[actix_web::test]
    async fn ipv4_translated_and_teredo_literal_urls_are_refused_when_set() {
        for bad in TRANSLATED_AND_TEREDO {
            let url = format!("http://[{bad}]/hook");
            assert!(check_url(&url, false).await.is_err(), "{url}");
            assert!(check_url(&url, true).await.is_ok(), "{url} with the flag");
        }
    }

    #[actix_web::test]
    async fn the_delivery_resolver_drops_ipv4_translated_and_teredo_addresses() {
        use std::str::FromStr;
        for bad in TRANSLATED_AND_TEREDO {
            let name = Name::from_str(bad).expect("a name");
            let resolved = resolver(false).resolve(name).await;
            assert!(resolved.is_err(), "{bad} resolved to an allowed address");
            let name = Name::from_str(bad).expect("a name");
            assert!(
                resolver(true).resolve(name).await.is_ok(),
                "{bad} with the flag"
            );
        }
    }

    #[actix_web::test]
    async fn urls_aimed_at_private_targets_are_refused_when_set() {
        for bad in [
            "http://127.0.0.1:8080/hook",
            "http://localhost/x",
            "https://10.0.0.1/",
            "http://[::1]/",
            "http://sub.localhost/",
        ] {
            assert!(check_url(bad, false).await.is_err(), "{bad}");
            assert!(check_url(bad, true).await.is_ok(), "{bad} with the flag");
        }
        assert!(check_url("https://hooks.example/never-resolves", false)
            .await
            .is_ok());
    }
}
