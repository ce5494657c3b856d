"""API keys: ``Authorization: Bearer <key>``, each key bound to its collections.

With no keys configured the server serves loopback clients only. Behind a
reverse proxy on the same machine every client looks local: configure keys
there (or run uvicorn with trusted ``--proxy-headers``).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from hippocampus.api.errors import LoopbackOnlyError, UnauthorizedError

_LOOPBACK_NAMES = frozenset({"localhost", "testclient"})
"""Client hosts that are loopback without being IP addresses; ``testclient`` is
what Starlette's TestClient reports."""

bearer_scheme = HTTPBearer(
    auto_error=False,
    description="An API key from HIPPO_API_KEYS, bound to the collections it may touch.",
)


@dataclass(frozen=True)
class Access:
    """What the caller of one request may touch.

    Attributes:
        collections: the collections allowed; ``None`` means every collection.
    """

    collections: frozenset[str] | None

    def allows(self, collection: str) -> bool:
        return self.collections is None or collection in self.collections


class KeyRing:
    """The configured API keys, compared in constant time.

    Only SHA-256 digests of the keys are kept: every comparison is then between
    equal-length values, so ``hmac.compare_digest`` leaks neither the content nor
    the length of a key, and the loop visits every key whatever matches.

    Args:
        key_map: ``{key: collections}`` as :meth:`HippoSettings.key_map` gives it.
    """

    def __init__(self, key_map: dict[str, frozenset[str] | None]) -> None:
        self._entries = [(_digest(key), scope) for key, scope in key_map.items()]

    @property
    def configured(self) -> bool:
        """Whether any key is configured (if not, only loopback clients are served)."""
        return bool(self._entries)

    def lookup(self, presented: str) -> Access | None:
        """The access a presented key grants, or ``None`` if it is not a key."""
        digest = _digest(presented)
        found: Access | None = None
        for known, scope in self._entries:
            # No early exit: the time taken does not say which key matched.
            if hmac.compare_digest(known, digest):
                found = Access(scope)
        return found


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


def is_loopback(host: str | None) -> bool:
    """Whether a client host is this machine (127.0.0.0/8, ::1, or the test client)."""
    if host is None:
        return False
    if host in _LOOPBACK_NAMES:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def _keyring(request: Request) -> KeyRing:
    keyring = request.app.state.keyring
    assert isinstance(keyring, KeyRing)
    return keyring


async def authorize(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
) -> Access:
    """Who is calling: the access their key grants. Async because it does not block:
    it runs in the event loop rather than in a worker thread.

    Raises:
        UnauthorizedError: keys are configured and none valid was presented (401).
        LoopbackOnlyError: no keys are configured and the client is remote (403).
    """
    keyring = _keyring(request)
    if not keyring.configured:
        host = request.client.host if request.client else None
        if not is_loopback(host):
            raise LoopbackOnlyError(
                "no API keys are configured (HIPPO_API_KEYS), so this server serves "
                "clients on its own machine only"
            )
        return Access(None)
    if credentials is None:
        raise UnauthorizedError("an API key is required: send 'Authorization: Bearer <key>'")
    access = keyring.lookup(credentials.credentials)
    if access is None:
        raise UnauthorizedError("the API key is not valid")
    return access


AccessDep = Annotated[Access, Depends(authorize)]
