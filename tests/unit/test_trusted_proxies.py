"""auth.trusted_proxies (app/web/proxies.py): the settings accept addresses and networks
only, and the client's address is taken from X-Forwarded-For only when the peer is one
of them (its right-most hop that is not a trusted proxy); an ASGI app, no server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import ValidationError

from app.config import AuthSettings
from app.web.proxies import behind_proxies


def seen(trusted: str, peer: str, forwarded: str | None, proto: str | None = None) -> Any:
    """(client host, scheme) the app behind the proxies' middleware sees."""
    got: dict[str, Any] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        got.update(client=scope["client"][0], scheme=scope["scheme"])

    headers = [(b"x-forwarded-for", forwarded.encode())] if forwarded else []
    headers += [(b"x-forwarded-proto", proto.encode())] if proto else []
    scope = {"type": "http", "client": (peer, 5000), "scheme": "http", "headers": headers}
    wrapped = behind_proxies(AuthSettings(trusted_proxies=trusted))(app)
    asyncio.run(wrapped(scope, None, None))
    return got["client"], got["scheme"]


def test_the_right_most_untrusted_hop_is_the_client() -> None:
    trusted = "10.0.0.0/8, 127.0.0.1"
    assert seen(trusted, "10.0.0.2", "6.6.6.6, 203.0.113.7, 10.9.9.9") == ("203.0.113.7", "http")
    assert seen(trusted, "127.0.0.1", "203.0.113.8", "https") == ("203.0.113.8", "https")
    assert seen(trusted, "10.0.0.2", None) == ("10.0.0.2", "http")


def test_headers_from_an_untrusted_peer_are_ignored() -> None:
    assert seen("10.0.0.0/8", "198.51.100.1", "203.0.113.7", "https") == ("198.51.100.1", "http")
    assert seen("", "127.0.0.1", "203.0.113.7") == ("127.0.0.1", "http")
    assert seen("", "testclient", "203.0.113.7") == ("testclient", "http")


def test_the_default_trusts_loopback_only() -> None:
    assert AuthSettings().trusted_proxies == ("127.0.0.1", "::1")
    assert seen("127.0.0.1, ::1", "::1", "203.0.113.7") == ("203.0.113.7", "http")


def test_entries_must_be_addresses_or_networks() -> None:
    auth = AuthSettings(trusted_proxies="10.1.2.3/8, 192.0.2.1, ::1")
    assert auth.trusted_proxies == ("10.0.0.0/8", "192.0.2.1", "::1")
    with pytest.raises(ValidationError, match="'proxy.local' is not an IP address or network"):
        AuthSettings(trusted_proxies="proxy.local")
