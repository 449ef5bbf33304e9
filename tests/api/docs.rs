//! `GET /docs`: the interactive API reference, every file of it served by the binary itself.

use reqwest::StatusCode;

use crate::helpers::{assert_error, spawn_app};

/// The values of every `src="..."` and `href="..."` in a page.
fn references(html: &str) -> Vec<String> {
    let mut found = Vec::new();
    for attribute in ["src=\"", "href=\""] {
        for (start, _) in html.match_indices(attribute) {
            let rest = &html[start + attribute.len()..];
            if let Some(end) = rest.find('"') {
                found.push(rest[..end].to_owned());
            }
        }
    }
    found
}

fn content_type(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

#[actix_web::test]
async fn the_docs_page_and_every_file_it_references_are_served_from_the_binary() {
    let app = spawn_app().await;
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client");
    let response = no_redirects
        .get(format!("{}/docs", app.root))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::PERMANENT_REDIRECT);
    assert_eq!(response.headers()["location"], "/docs/");

    // Followed, as a browser does.
    let page = app
        .client
        .get(format!("{}/docs", app.root))
        .send()
        .await
        .expect("sent");
    assert_eq!(page.status(), StatusCode::OK);
    assert!(
        content_type(&page).starts_with("text/html"),
        "{}",
        content_type(&page)
    );
    let html = page.text().await.expect("text");
    assert!(html.contains("swagger-ui"), "{html}");

    let files = references(&html);
    assert!(
        files.len() >= 4,
        "the page references its scripts and styles: {files:?}"
    );
    let mut scripts = String::new();
    for file in &files {
        assert!(
            !file.contains("://") && !file.starts_with("//"),
            "`{file}` would need the internet"
        );
        let url = format!("{}/docs/{}", app.root, file.trim_start_matches("./"));
        let response = app.client.get(&url).send().await.expect("sent");
        assert_eq!(response.status(), StatusCode::OK, "{url}");
        let kind = content_type(&response);
        let expected = match file.rsplit('.').next() {
            Some("js") => "javascript",
            Some("css") => "text/css",
            Some("png") => "image/png",
            other => panic!("an unexpected file type: {other:?}"),
        };
        assert!(kind.contains(expected), "{url}: {kind}");
        let bytes = response.bytes().await.expect("a body");
        assert!(!bytes.is_empty(), "{url} is empty");
        if file.ends_with("swagger-initializer.js") {
            scripts = String::from_utf8_lossy(&bytes).into_owned();
        }
    }

    // The page shows this server's document, and nothing sends it to an outside validator.
    assert!(scripts.contains("\"/api/v1/openapi.json\""), "{scripts}");
    assert!(scripts.contains("\"validatorUrl\": \"none\""), "{scripts}");
    let document = app.get("/openapi.json").await;
    assert_eq!(document.status(), StatusCode::OK);

    let missing = app
        .client
        .get(format!("{}/docs/no-such-file.js", app.root))
        .send()
        .await
        .expect("sent");
    assert_error(missing, StatusCode::NOT_FOUND, "not_found").await;
}
