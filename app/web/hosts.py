"""Which Host headers the server answers to: a request naming another host is a DNS
rebinding attempt (a foreign site's name resolved to this server) or a mistake."""

from __future__ import annotations

from app.config import Settings

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")


def allowed_hosts(settings: Settings, bind: str | None = None) -> tuple[str, ...]:
    """server.allowed_hosts, else the loopback names plus a concrete bind address."""
    if settings.server.allowed_hosts:
        return settings.server.allowed_hosts
    hosts = list(LOOPBACK_HOSTS)
    address = (bind or settings.server.host).strip("[]").lower()
    if address not in ("0.0.0.0", "::", "") and address not in hosts:  # noqa: S104
        hosts.append(address)
    return tuple(hosts)


def host_allowed(host_header: str | None, allowed: tuple[str, ...]) -> bool:
    """Host without its port, matched exactly, by '*.suffix', or anything with '*'."""
    if not host_header:
        return False
    host = host_header.strip().lower()
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    for pattern in allowed:
        if pattern == "*" or pattern.strip("[]") == host:
            return True
        if pattern.startswith("*.") and host.endswith(pattern[1:]):
            return True
    return False
