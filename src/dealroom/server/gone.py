"""A call whose HTTP client has gone is cancelled, so that it holds no slot of its seat.

Over HTTP an MCP call runs in its session, not in the request that brought it (the SDK ties
the two only for the stateless protocol), so a long poll whose connection dropped (a client
killed, a network cut) would go on for up to a minute, holding one of its seat's
``SEAT_CALLS_IN_FLIGHT`` slots: a reconnected client was refused ``too_many_calls`` until the
dead polls timed out. ``while_connected`` runs a call beside a watch on its request's ASGI
``receive``: once the body is read, ``receive`` returns only ``http.disconnect`` (uvicorn
wakes every waiter, so the SDK's own watch on the stream still sees it), and the call is then
cancelled as ``notifications/cancelled`` would cancel it: a wait leaves the seat asleep, an
action that has not taken effect is withdrawn (one that has stays: ``get_state`` says which).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
import structlog
from starlette.requests import Request

log = structlog.stdlib.get_logger(__name__)

T = TypeVar("T")


async def while_connected(request: object, call: Callable[[], Awaitable[T]]) -> T | None:
    """``call()``'s result, or None when the HTTP client of ``request`` (a starlette Request;
    anything else, such as stdio's None, is never gone) disconnected first: then the call was
    cancelled, and no one is left to read a reply."""
    if not isinstance(request, Request):
        return await call()
    receive = request.receive
    done: list[T] = []
    failed: list[Exception] = []  # raised as it is, not in the task group's ExceptionGroup
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            group.cancel_scope.cancel()

        group.start_soon(watch)
        try:
            done.append(await call())
        except Exception as exc:  # re-raised below, outside the group
            failed.append(exc)
        group.cancel_scope.cancel()
    if failed:
        raise failed[0]
    if not done:
        log.info("client gone, call cancelled")
        return None
    return done[0]
