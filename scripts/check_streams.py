#!/usr/bin/env python3
"""The live vote streams against the OpenAPI document, for scripts/schemathesis.sh.

A stream never ends, so schemathesis would wait out its request timeout on every example of
these operations (and count the timeout as an error). This check sends each stream operation of
the document its documented parameter and refusals and reads only the status line, the headers
and (for a refusal) the body: a 200 must be `text/event-stream`; a refusal must be a status the
document lists for the operation, with the content type and the required fields of the schema
it gives there.

    check_streams.py DOCUMENT_URL ROOT_URL BOT_ID BOT_TOKEN

Prints one line per case and exits 1 when any case fails, 0 otherwise.
"""
import http.client
import json
import sys
import urllib.parse
import urllib.request
import uuid


def resolve(doc, schema):
    while isinstance(schema, dict) and "$ref" in schema:
        node = doc
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def request(root, path, headers):
    url = urllib.parse.urlsplit(root)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    # A stream's body never ends: read it only when the answer is not a stream.
    kind = response.getheader("Content-Type", "")
    body = b"" if kind.startswith("text/event-stream") else response.read()
    connection.close()
    return response.status, kind, body


def check(doc, operation, status, kind, body):
    """What is wrong with this answer, per the document (None when nothing)."""
    documented = operation["responses"].get(str(status))
    if documented is None:
        return f"status {status} is not documented ({sorted(operation['responses'])})"
    content = resolve(doc, documented).get("content", {})
    media = kind.split(";")[0].strip()
    if media not in content:
        return f"content type {kind!r} is not documented for {status} ({sorted(content)})"
    if media == "application/json":
        try:
            value = json.loads(body)
        except ValueError:
            return f"body is not JSON: {body[:200]!r}"
        schema = resolve(doc, content[media].get("schema", {}))
        missing = [key for key in schema.get("required", []) if key not in value]
        if missing:
            return f"body {value} lacks {missing}"
    return None


def main():
    document_url, root, bot, token = sys.argv[1:5]
    doc = json.load(urllib.request.urlopen(document_url))
    streams = [path for path in doc["paths"] if path.endswith("votes/stream")]
    if not streams:
        print("no stream operation in the document")
        return 1
    failures = 0
    for path in streams:
        operation = doc["paths"][path]["get"]
        on = lambda id: path.replace("{id}", id)  # noqa: E731
        cases = [
            ("the stream", on(bot), {"Authorization": token}, 200),
            ("after a vote id", on(bot), {"Authorization": token, "Last-Event-ID": "1"}, 200),
            ("Last-Event-ID not a vote id", on(bot), {"Authorization": token, "Last-Event-ID": "x"}, 400),
            ("no token", on(bot), {}, 401),
            ("a token that is not one", on(bot), {"Authorization": "nope"}, 401),
        ]
        if "{id}" in path:
            cases += [
                ("a bot that does not exist", on(str(uuid.uuid4())), {"Authorization": token}, 404),
                ("an id that is not a UUID", on("not-a-uuid"), {"Authorization": token}, 404),
            ]
        for name, target, headers, expected in cases:
            status, kind, body = request(root, target, headers)
            problem = check(doc, operation, status, kind, body)
            if problem is None and status != expected:
                problem = f"status {status}, expected {expected}"
            failures += problem is not None
            print(f"{'FAIL' if problem else 'ok  '} GET {path}: {name} -> {status} {kind}"
                  + (f": {problem}" if problem else ""))
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
