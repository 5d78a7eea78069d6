"""`hamburger serve` against a hostile client: every case answers an OpenAI-shaped error and the server keeps
serving (a real server process, or the real app in uvicorn in this process where a fault must be injected)."""

import copy
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

httpx = pytest.importorskip("httpx")

from tests.helpers import KEY, Server, error_of, free_port, long_body  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")

AUTH = {"Authorization": f"Bearer {KEY}"}
JSON = {**AUTH, "Content-Type": "application/json"}


def post(srv, path: str, content: bytes, headers=JSON, **kw):
    return httpx.post(srv.url + path, content=content, headers=headers, timeout=60, **kw)


def test_deeply_nested_json_is_400(server):
    for raw in (b"[" * 100_000, b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"):
        r = post(server, "/v1/chat/completions", raw)
        assert r.status_code == 400, r.text
        assert error_of(r)["code"] == "invalid_json" and error_of(r)["type"] == "invalid_request_error"
    assert server.health()["status"] == "ok"


def test_lone_surrogate_is_400_on_both_endpoints(server):
    for path, raw in [("/v1/completions", rb'{"prompt": "\ud83c", "max_tokens": 4}'),
                      ("/v1/completions", rb'{"prompt": "ok", "stop": ["\udf54"], "max_tokens": 4}'),
                      ("/v1/chat/completions", rb'{"messages": [{"role": "user", "content": "\ud83c"}]}')]:
        r = post(server, path, raw)
        assert r.status_code == 400 and error_of(r)["code"] == "invalid_json", (path, raw, r.text)
    r = post(server, "/v1/completions", rb'{"prompt": "a \ud83c\udf54 pair is fine", "max_tokens": 2}')
    assert r.status_code == 200, r.text


def test_non_json_content_type_is_415_and_too_many_stops_400(server):
    body = b'{"prompt": "hello", "max_tokens": 2}'
    for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        r = post(server, "/v1/completions", body, headers={**AUTH, "Content-Type": kind})
        assert r.status_code == 415 and error_of(r)["code"] == "unsupported_media_type", (kind, r.text)
    assert post(server, "/v1/completions", body, headers={**AUTH, "Content-Type": "application/json; charset=utf-8"}
                ).status_code == 200
    stops = ["a", "b", "c", "d", "e"]
    r = httpx.post(server.url + "/v1/completions", json={"prompt": "hi", "max_tokens": 2, "stop": stops},
                   headers=AUTH)
    assert r.status_code == 400 and error_of(r)["param"] == "stop", r.text
    r = httpx.post(server.url + "/v1/completions", json={"prompt": "hi", "max_tokens": 2, "stop": stops[:4]},
                   headers=AUTH)
    assert r.status_code == 200, r.text


def test_oversized_body_is_413_before_it_is_read(server):
    big = b'{"prompt": "' + b"x" * (2 << 20) + b'", "max_tokens": 2}'  # the default limit is 1 MiB
    start = time.perf_counter()
    r = post(server, "/v1/completions", big)
    assert r.status_code == 413 and error_of(r)["code"] == "request_too_large", r.text
    assert time.perf_counter() - start < 5

    def chunks():  # no Content-Length: counted as it arrives
        for _ in range(40):
            yield b"x" * 65536

    r = post(server, "/v1/completions", chunks())
    assert r.status_code == 413 and error_of(r)["code"] == "request_too_large", r.text
    assert server.health()["status"] == "ok"


# ------------------------------------------------------------------------------ an injected fault
@pytest.fixture(scope="module")
def faulty_app_server(checkpoint):
    """The real app in uvicorn (in this process) over a tokenizer that fails on the prompt "boom"."""
    import uvicorn

    from hamburger.serve.app import create_app

    _, model, tok = checkpoint
    broken = copy.deepcopy(tok)

    def call(self, text, *a, **kw):
        if text == "boom":
            raise RuntimeError("injected fault")
        return type(tok).__call__(self, text, *a, **kw)

    broken.__class__ = type("Broken", (type(tok),), {"__call__": call})
    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(create_app(model, broken, "ckpt"), port=port, log_level="critical"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    end = time.time() + 30
    while not srv.started and time.time() < end:
        time.sleep(0.05)
    yield port
    srv.should_exit = True
    thread.join(15)


def http_exchange(sock: socket.socket, request: bytes) -> bytes:
    """Send one request on a kept-alive socket and read its (Content-Length framed) response."""
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        if not piece:
            raise ConnectionError(f"the server closed the connection after {data!r}")
        data += piece
    head, _, rest = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    while len(rest) < length:
        piece = sock.recv(65536)
        if not piece:
            raise ConnectionError("the server closed the connection mid-body")
        rest += piece
    return head + b"\r\n\r\n" + rest


def test_unexpected_error_is_openai_shaped_500_and_keeps_the_connection(faulty_app_server):
    import json

    body = b'{"prompt": "boom", "max_tokens": 2}'
    boom = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    with socket.create_connection(("127.0.0.1", faulty_app_server), timeout=30) as sock:
        first = http_exchange(sock, boom)
        head, _, payload = first.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 500"), first
        err = json.loads(payload)["error"]
        assert set(err) == {"message", "type", "param", "code"} and err["type"] == "server_error"
        second = http_exchange(sock, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")  # same connection
        assert second.startswith(b"HTTP/1.1 200"), second


# ------------------------------------------------------------------------------ graceful drain
def test_sigterm_drains_running_requests_and_refuses_new_ones(checkpoint, tmp_path):
    # (serve's default mode, verify; without prompt lookup, at confidence 1.0 it decodes one token per forward)
    srv = Server(checkpoint[0], tmp_path / "drain.log", "--api-key", KEY, "--drain-timeout", "0.5",
                 "--lookup", "0").wait()
    body = long_body(checkpoint)
    try:
        with httpx.Client(headers=AUTH, timeout=60) as http, ThreadPoolExecutor(1) as pool:
            stream = http.stream("POST", srv.url + "/v1/completions", json=body)
            r = stream.__enter__()
            lines = r.iter_lines()
            assert next(line for line in lines if line.startswith("data: "))  # the stream runs
            whole = pool.submit(httpx.post, srv.url + "/v1/completions", json={**body, "stream": False},
                                headers=AUTH, timeout=60)
            end = time.time() + 10
            while srv.health()["running"] < 2 and time.time() < end:
                time.sleep(0.02)
            srv.proc.send_signal(signal.SIGTERM)
            end = time.time() + 5
            while srv.health()["status"] != "draining" and time.time() < end:  # it starts on uvicorn's next tick
                time.sleep(0.02)
            # (a request sent before the drain starts would be served, and could outlast the drain's short window)
            refused = httpx.post(srv.url + "/v1/completions", json={"prompt": "hi", "max_tokens": 2}, headers=AUTH)
            assert refused.status_code == 503 and error_of(refused)["code"] == "shutting_down"
            rest = [line for line in lines if line.startswith("data: ")]
            stream.__exit__(None, None, None)
            import json

            assert rest[-1] == "data: [DONE]", rest[-3:]
            final = json.loads(rest[-2][6:])
            assert final["choices"][0]["finish_reason"] == "length"  # cut by the drain, answered cleanly
            answer = whole.result()
            assert answer.status_code == 200, answer.text
            assert answer.json()["choices"][0]["finish_reason"] == "length"
            assert answer.json()["usage"]["completion_tokens"] < body["max_tokens"]  # cut, not finished
            assert answer.json()["usage"]["hamburger"]["mode"] == "verify"  # serve's default mode
        assert srv.proc.wait(20) == 0
    finally:
        srv.stop()


def test_server_default_mode_applies_to_requests_without_one(checkpoint):
    """`--mode verify` (create_app's ``mode``) is what a request without `mode` gets; `mode` in a request wins."""
    from fastapi.testclient import TestClient

    from hamburger.errors import HamburgerError
    from hamburger.serve.app import create_app

    _, model, tok = checkpoint
    with pytest.raises(HamburgerError):
        create_app(model, tok, "ckpt", mode="fast")
    body = {"model": "ckpt", "prompt": "hello", "max_tokens": 6}
    with TestClient(create_app(model, tok, "ckpt", mode="verify")) as client:
        default = client.post("/v1/completions", json=body).json()["usage"]["hamburger"]
        merged = client.post("/v1/completions", json={**body, "mode": "hamburger"}).json()["usage"]["hamburger"]
    assert default["mode"] == "verify" and default["kv_slots"] == default["kv_slots_ordinary"]
    assert merged["mode"] == "hamburger"


def test_draft_rows_zero_serves_the_same_answer_without_drafts(checkpoint):
    """`create_app(draft_rows=N)` (`serve --draft-rows`): the verify modes draft only in forwards of at most N rows;
    at 0 a verify request is decoded one token per forward, with the same (lossless) answer."""
    from fastapi.testclient import TestClient

    from hamburger.engine.lookup import PromptLookup
    from hamburger.serve.app import create_app

    _, model, tok = checkpoint
    body = {"model": "ckpt", "prompt": "abcabcabcabcabc", "max_tokens": 24, "mode": "verify", "confidence": 0.01}
    out = {}
    for rows in (None, 0):
        app = create_app(model, tok, "ckpt", lookup=PromptLookup(tokens=4, min_ngram=1), draft_rows=rows)
        with TestClient(app) as client:
            out[rows] = client.post("/v1/completions", json=body).json()
    assert out[0]["choices"][0]["text"] == out[None]["choices"][0]["text"]
    plain, drafting = out[0]["usage"]["hamburger"], out[None]["usage"]["hamburger"]
    assert plain["tau"] == 1.0 and drafting["base_forwards"] < plain["base_forwards"]
