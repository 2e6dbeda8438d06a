"""The request class of the API: a JSON body too deep to decode is the caller's mistake.

msgspec raises RecursionError (not a decode error) on a body nested near Python's
recursion limit, before any model could apply the metadata depth rule; without
this it would be a 500.
"""

from __future__ import annotations

from typing import Any

from litestar import Request

from app.errors import InvalidInput
from app.services.common.inputs import too_deep


class ElephantRequest(Request[Any, Any, Any]):
    async def json(self) -> Any:
        try:
            return await super().json()
        except RecursionError:
            raise InvalidInput(too_deep(await self.body())) from None
