"""Dependencies the routes declare, as ``Annotated`` aliases.

The ones that only look something up are ``async def``: FastAPI runs a plain
``def`` dependency in a worker thread, and each hop to a thread and back costs
more than the lookup; under load it also waits for the interpreter lock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

from fastapi import Depends, Path, Request

from hippocampus.api.admission import Admission, Lane
from hippocampus.api.auth import Access, AccessDep
from hippocampus.api.errors import NOT_FOUND_MESSAGE
from hippocampus.config import HippoSettings
from hippocampus.errors import NotFoundError
from hippocampus.service import Hippocampus


async def get_service(request: Request) -> Hippocampus:
    """The engine the app serves (built by the lifespan, or injected)."""
    service = getattr(request.app.state, "service", None)
    if not isinstance(service, Hippocampus):
        raise RuntimeError("the app has no service: it was not started through its lifespan")
    return service


async def get_settings(request: Request) -> HippoSettings:
    """The settings the app was created with."""
    settings = request.app.state.settings
    assert isinstance(settings, HippoSettings)
    return settings


ServiceDep = Annotated[Hippocampus, Depends(get_service)]
SettingsDep = Annotated[HippoSettings, Depends(get_settings)]


async def get_collection(
    access: AccessDep,
    service: ServiceDep,
    collection: Annotated[
        str,
        Path(
            description=(
                "1-128 characters: letters, digits and _ . : @ -, starting with a letter or "
                "digit (e.g. org:acme, persona:ada)"
            ),
            examples=["org:acme"],
        ),
    ],
) -> str:
    """The ``{collection}`` of the path, once the caller may touch it.

    Authentication runs first (``access``), so an unauthenticated caller learns
    nothing, not even whether the name is well formed.

    Raises:
        InvalidInputError: the name is not a valid collection name (422).
        NotFoundError: the key is not bound to this collection; answered exactly
            like a request for something that does not exist (404).
    """
    service.check_collection(collection)
    if not access.allows(collection):
        raise NotFoundError(NOT_FOUND_MESSAGE)
    return collection


CollectionDep = Annotated[str, Depends(get_collection)]


def _admitted(lane: Lane) -> Callable[..., AsyncIterator[None]]:
    async def admit(request: Request, access: AccessDep) -> AsyncIterator[None]:
        # After authentication (``access``): a caller without a valid key never
        # takes a place in the queue.
        admission = request.app.state.admission
        assert isinstance(admission, Admission)
        async with admission.slot(lane):
            yield

    admit.__name__ = f"admit_{lane.value}"
    return admit


# For a route's ``dependencies=[...]``: the request holds a slot of its lane while
# its endpoint runs (see api.admission); routes that do little work declare none.
# The slot is given back as the endpoint returns ("function" scope), so the next
# heavy request starts while this one's response is written.
HEAVY: Any = Depends(_admitted(Lane.DEFAULT), scope="function")
CONVERSATION_TURN: Any = Depends(_admitted(Lane.CONVERSATION), scope="function")


def unwritten_collection_warnings(
    service: Hippocampus, access: Access, collection: str, found: int | None
) -> list[str]:
    """A warning when a read found nothing because the collection holds no memory
    at all (a misspelt name reads as an empty answer otherwise).

    Reading a collection is not an error: a new persona's first recall is empty
    too. The count names only collections the caller's key may see. ``found`` is
    what the read found (``None``: it did not look, so it cannot tell); only an
    empty answer lists the collections, which reads every memory's collection.
    """
    if found is None or found:
        return []
    known = service.collections()
    if collection in known:
        return []
    visible = sum(1 for name in known if access.allows(name))
    noun, verb = ("collection", "holds") if visible == 1 else ("collections", "hold")
    return [
        f"collection {collection!r} holds no memories: nothing has been written to it "
        f"(check the name: {visible} {noun} you may read {verb} memories)"
    ]
