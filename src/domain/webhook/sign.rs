//! `X-Botlist-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`, which is
//! also the `v1` format's `x-topgg-signature`; and Standard Webhooks' `webhook-signature`.

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub fn signature_header(secret: &str, unix_seconds: i64, body: &str) -> String {
    format!("t={unix_seconds},v1={}", sign(secret, unix_seconds, body))
}

pub fn sign(secret: &str, unix_seconds: i64, body: &str) -> String {
    // HMAC takes keys of any length; this cannot fail.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(unix_seconds.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Standard Webhooks' `webhook-signature`: `v1,<base64 of HMAC-SHA256 of "<id>.<t>.<body>">`,
/// keyed with the secret's decoded key.
pub fn standard_signature(key: &[u8], id: &str, unix_seconds: i64, body: &str) -> String {
    use base64::Engine;
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(unix_seconds.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    let digest = mac.finalize().into_bytes();
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_covers_the_time_and_the_raw_body() {
        // Computed independently with Python's hmac module.
        assert_eq!(
            sign("whsec_test", 1_794_744_000, r#"{"type":"webhook.test"}"#),
            "ccc1d93fc2c6b7b7cec51e51bae0f53321a0d70a23a0727798040fea5628fe02"
        );
        assert_ne!(sign("a", 1, "body"), sign("a", 2, "body"));
        assert_ne!(sign("a", 1, "body"), sign("b", 1, "body"));
        assert_eq!(sign("key", 0, "x").len(), 64);
        assert!(signature_header("key", 5, "x").starts_with("t=5,v1="));
    }

    #[test]
    fn the_standard_signature_is_the_specifications_own_example() {
        // The example of the Standard Webhooks specification, checked again with Python's
        // hmac and base64 modules.
        let key = crate::domain::webhook::standard_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            .expect("a standard secret");
        assert_eq!(
            standard_signature(
                &key,
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1_614_265_330,
                r#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        for bad in [
            "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "whsec_!!!",
            "whsec_c2hvcnQ=",
        ] {
            assert!(crate::domain::webhook::standard_key(bad).is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        /// Any change to what is signed (the id, the time or one byte of the body) changes
        /// both formats' signatures: a receiver that recomputes them refuses a replay with a
        /// new time or a tampered body.
        #[test]
        fn every_signed_part_counts(
            key in proptest::collection::vec(proptest::prelude::any::<u8>(), 16..64),
            id in "[a-z0-9-]{1,36}",
            t in 0i64..4_000_000_000,
            body in "[ -~]{1,200}",
            flip in 0usize..200,
        ) {
            let signed = standard_signature(&key, &id, t, &body);
            proptest::prop_assert!(signed.starts_with("v1,"));
            proptest::prop_assert_ne!(&signed, &standard_signature(&key, &id, t + 1, &body));
            proptest::prop_assert_ne!(&signed, &standard_signature(&key, &format!("{id}x"), t, &body));
            let mut tampered = body.clone().into_bytes();
            let at = flip % tampered.len();
            tampered[at] = if tampered[at] == b'a' { b'b' } else { b'a' };
            let tampered = String::from_utf8(tampered).expect("ASCII");
            proptest::prop_assert_ne!(&signed, &standard_signature(&key, &id, t, &tampered));
            let secret = String::from_utf8_lossy(&key).into_owned();
            proptest::prop_assert_ne!(sign(&secret, t, &body), sign(&secret, t, &tampered));
            proptest::prop_assert_ne!(sign(&secret, t, &body), sign(&secret, t + 1, &body));
        }
    }
}
