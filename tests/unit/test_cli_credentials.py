"""Where the ``resumable`` command sends what proves who you are: never in plain HTTP to a remote host
(a SigV4 signature or a bearer token would travel unencrypted), whatever names the URL (--url,
RESUMABLE_URL, a stack's ApiUrl), and a token never from the command line (``ps`` shows it to other
users, the shell's history keeps it): from RESUMABLE_TOKEN or --token-stdin, echoed nowhere."""

from __future__ import annotations

import getpass
import io
import sys
import urllib.request
from typing import Any

import pytest

from resumable.cli import client, main

TOKEN = "eyJ-the-token-itself-4f9c"


class _Sent:
    """The HTTP requests the command sent (none goes anywhere: each is answered 200 with no body)."""

    def __init__(self) -> None:
        self.requests: list[urllib.request.Request] = []

    def __call__(self, request: urllib.request.Request, timeout: float) -> Any:
        self.requests.append(request)
        return _Reply()

    def authorization(self) -> str | None:
        [request] = self.requests
        return request.get_header("Authorization")


class _Reply(io.BytesIO):
    status = 200

    def __init__(self) -> None:
        super().__init__(b'{"interactions": []}')


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> _Sent:
    """No URL, token or credentials of the person running the tests; AWS credentials that sign."""
    for name in ("RESUMABLE_URL", "RESUMABLE_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-secret")
    monkeypatch.setenv("RESUMABLE_LOCAL_STATE", "/nonexistent/local-run.json")
    recorder = _Sent()
    monkeypatch.setattr(client, "_open", recorder)
    return recorder


REMOTE_PLAIN = [
    "http://example.com",
    "http://api.example.com:80/prod",
    "HTTP://example.com",
    "http://localhost.evil.com",
    "http://127.0.0.1.evil.com",
    "http://localhost@evil.com",
    "http://127.0.0.1:3000@evil.com",
    "http://[::2]:3000",
    "http://0.0.0.0:3000",
    "http://10.0.0.1",
]


@pytest.mark.parametrize("url", REMOTE_PLAIN)
def test_plain_http_to_a_remote_host_is_refused_before_anything_is_sent(
    url: str, sent: _Sent, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main.main(["--url", url, "--json", "inbox"]) == 2
    said = capsys.readouterr().err
    assert sent.requests == []
    assert "plain HTTP to a remote host" in said and "nothing was sent" in said and "https://" in said, said


@pytest.mark.parametrize("url", REMOTE_PLAIN[:4])
def test_plain_http_to_a_remote_host_is_refused_with_a_token_too(
    url: str, sent: _Sent, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RESUMABLE_TOKEN", TOKEN)
    assert main.main(["--url", url, "--json", "inbox"]) == 2
    assert sent.requests == []
    assert TOKEN not in capsys.readouterr().err


LOOPBACK = [
    "http://127.0.0.1:3000",
    "http://127.5.6.7:3000",
    "http://localhost:3000",
    "http://LOCALHOST:3000",
    "HTTP://127.0.0.1:3000",
    "http://[::1]:3000",
]


@pytest.mark.parametrize("url", LOOPBACK)
def test_plain_http_to_a_loopback_address_is_sent_unsigned(url: str, sent: _Sent) -> None:
    assert main.main(["--url", url, "--json", "inbox"]) == 0
    assert sent.authorization() is None


@pytest.mark.parametrize("url", ["https://api.example.com", "https://localhost.evil.com", "https://127.0.0.1:3000"])
def test_https_is_signed_whatever_its_host(url: str, sent: _Sent) -> None:
    assert main.main(["--url", url, "--json", "inbox"]) == 0
    assert (sent.authorization() or "").startswith("AWS4-HMAC-SHA256 ")


def test_a_signature_is_scoped_to_the_region_of_the_url_else_of_the_credential_chain(
    sent: _Sent, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """An API Gateway URL names its Region; any other URL is signed for the Region the environment or
    the profile names (as boto3 would take it), us-east-1 if none does."""
    config = tmp_path / "config"
    config.write_text("[profile ops]\nregion = ap-south-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    for environment, url, region in [
        ({}, "https://abc.execute-api.eu-west-1.amazonaws.com", "eu-west-1"),
        ({"AWS_DEFAULT_REGION": "eu-west-2"}, "https://abc.execute-api.eu-west-1.amazonaws.com", "eu-west-1"),
        ({"AWS_PROFILE": "ops"}, "https://abc.execute-api.eu-west-1.amazonaws.com", "eu-west-1"),
        ({"AWS_DEFAULT_REGION": "eu-west-2"}, "https://api.example.com", "eu-west-2"),
        ({"AWS_PROFILE": "ops"}, "https://api.example.com", "ap-south-1"),
        ({}, "https://api.example.com", "us-east-1"),
    ]:
        with monkeypatch.context() as env:
            for name, value in environment.items():
                env.setenv(name, value)
            sent.requests.clear()
            assert main.main(["--url", url, "--json", "inbox"]) == 0
            assert f"/{region}/execute-api/aws4_request" in (sent.authorization() or ""), (environment, url)


def test_a_plain_http_resumable_url_is_refused_and_named(
    sent: _Sent, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RESUMABLE_URL", "http://api.example.com")
    assert main.main(["--json", "inbox"]) == 2
    assert sent.requests == []
    said = capsys.readouterr().err
    assert "RESUMABLE_URL http://api.example.com is plain HTTP to a remote host" in said, said


def test_a_stack_whose_api_url_is_plain_http_is_refused_and_named(
    sent: _Sent, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(main, "stack_url", lambda stack, region: "http://api.example.com")
    assert main.main(["--stack", "prod", "--json", "inbox"]) == 2
    assert sent.requests == []
    said = capsys.readouterr().err
    assert "stack prod's ApiUrl http://api.example.com is plain HTTP to a remote host" in said, said


def test_a_token_on_the_command_line_is_refused_naming_the_ways_that_are_not_seen(
    sent: _Sent, capsys: pytest.CaptureFixture[str]
) -> None:
    for given in (["--token", TOKEN], [f"--token={TOKEN}"]):
        assert main.main(["--url", "https://api.example.com", *given, "--json", "inbox"]) == 2
        out, err = capsys.readouterr()
        assert sent.requests == []
        assert TOKEN not in out + err
        assert "RESUMABLE_TOKEN" in err and "--token-stdin" in err and "nothing was sent" in err, err


def test_a_token_from_resumable_token_is_sent_as_a_bearer_token_unsigned(
    sent: _Sent, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RESUMABLE_TOKEN", TOKEN)
    assert main.main(["--url", "https://api.example.com", "--json", "inbox"]) == 0
    assert sent.authorization() == f"Bearer {TOKEN}"
    out, err = capsys.readouterr()
    assert TOKEN not in out + err


def test_token_stdin_reads_one_line_and_sends_it_as_a_bearer_token(
    sent: _Sent, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RESUMABLE_TOKEN", "the-environment-s")  # the flag, given, wins
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"  {TOKEN}\nwhat follows is not read\n"))
    assert main.main(["--url", "https://api.example.com", "--token-stdin", "--json", "inbox"]) == 0
    assert sent.authorization() == f"Bearer {TOKEN}"
    out, err = capsys.readouterr()
    assert TOKEN not in out + err


@pytest.mark.parametrize("typed", ["", "\n", "   \n"])
def test_token_stdin_with_nothing_to_read_is_refused(
    typed: str, sent: _Sent, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(typed))
    assert main.main(["--url", "https://api.example.com", "--token-stdin", "--json", "inbox"]) == 2
    assert sent.requests == []
    said = capsys.readouterr().err
    assert "--token-stdin read no token" in said and "nothing was sent" in said, said


def test_token_stdin_on_a_terminal_reads_the_token_without_echoing_it(
    sent: _Sent, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("never read: the terminal is\n"))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    prompts: list[str] = []

    def typed(prompt: str = "", stream: Any = None) -> str:  # getpass: the terminal, its echo off
        prompts.append(prompt)
        return TOKEN + "\n"

    monkeypatch.setattr(getpass, "getpass", typed)
    assert main.main(["--url", "https://api.example.com", "--token-stdin", "--json", "inbox"]) == 0
    assert sent.authorization() == f"Bearer {TOKEN}"
    assert prompts == ["token: "]
    out, err = capsys.readouterr()
    assert TOKEN not in out + err


def test_a_redirect_is_answered_as_it_came_and_the_credentials_go_nowhere_else(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 302 to another host (a custom domain or a proxy in front of the API) is not followed: the token
    or signature would go with it."""
    import http.server
    import threading

    reached: list[str | None] = []

    class Elsewhere(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            reached.append(self.headers.get("Authorization"))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"interactions": []}')

        def log_message(self, *args: Any) -> None:
            pass

    elsewhere = http.server.HTTPServer(("127.0.0.1", 0), Elsewhere)

    class Redirecting(Elsewhere):
        def do_GET(self) -> None:
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{elsewhere.server_address[1]}/interactions")
            self.end_headers()

    redirecting = http.server.HTTPServer(("127.0.0.1", 0), Redirecting)
    for server in (elsewhere, redirecting):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("RESUMABLE_TOKEN", "SECRET-JWT")
        url = f"http://127.0.0.1:{redirecting.server_address[1]}"
        assert main.main(["--url", url, "inbox"]) != 0
    finally:
        for server in (elsewhere, redirecting):
            server.shutdown()
    assert reached == []
    assert "SECRET-JWT" not in capsys.readouterr().err
