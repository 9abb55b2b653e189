"""Who may talk to a server evalkit starts (the viewer, the OTLP receiver).

A loopback address is this machine only and needs nothing. Any other address serves other
machines, so every request must carry an access token, as Jupyter does: a random one made at start
and printed in the URL, or the one given with ``--token``. A client presents it as
``Authorization: Bearer TOKEN``, a ``?token=TOKEN`` query parameter, or the cookie the viewer sets
after the first such request. Tokens are compared in constant time.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
from collections.abc import Mapping
from urllib.parse import parse_qs

TOKEN_COOKIE = "evalkit_token"


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and any loopback address (127.0.0.0/8, ``::1``)."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def access_token(host: str, given: str | None = None) -> str | None:
    """The token a server bound to ``host`` requires: ``given`` when set, else None on loopback and
    a fresh random token anywhere else. ValueError when ``given`` is not 16 to 256 URL-safe
    characters (an empty one would let anybody in)."""
    if given is not None:
        if not re.fullmatch(r"[A-Za-z0-9._~-]{16,256}", given):
            raise ValueError("--token: 16 to 256 characters among letters, digits and . _ ~ -")
        return given
    return None if is_loopback(host) else secrets.token_urlsafe(32)


def presented_token(headers: Mapping[str, str], query_string: str = "", cookies: Mapping[str, str] | None = None):
    """The token a request carries (header, query parameter, then cookie), or None. ``headers``
    is looked up by lower-case name."""
    auth = headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() in ("bearer", "token") and value.strip():
        return value.strip()
    if query_string:
        values = parse_qs(query_string).get("token")
        if values:
            return values[0]
    if cookies:
        return cookies.get(TOKEN_COOKIE)
    return None


def token_ok(expected: str | None, presented: str | None) -> bool:
    """Whether a request may proceed: always when no token is required, else only with the same
    token (constant-time comparison)."""
    if expected is None:
        return True
    if not presented:
        return False
    return hmac.compare_digest(expected.encode("utf-8", "surrogatepass"), presented.encode("utf-8", "surrogatepass"))
