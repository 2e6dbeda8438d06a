"""How a request's JSON body comes in: the request class, and the decoder of its model.

- ``ElephantRequest``: msgspec raises RecursionError (not a decode error) on a body
  nested near Python's recursion limit, before any model could apply the metadata depth
  rule; without it that would be a 500.
- ``RequestModels``: the request models (pydantic, ``JSONBody[Model]``) are validated
  here, and a refusal is the caller's 422 naming each field. Litestar's own decoder
  hands pydantic's errors on with the field's name alone, and Litestar then takes an
  error whose field shares its name with an injected dependency (``tenant``, ``access``,
  ``principal``, ``db``, ``elephant``) for a dependency that failed: ``POST /erase
  {"tenant": "maybe"}`` was a 500, and beside another error the field went unnamed. Raised
  as InvalidInput, a refusal never reaches that sorting; its body is the one Litestar
  gives every other field (``details.fields``: each {key, message}).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pydantic
from litestar import Request
from litestar.plugins.pydantic import PydanticInitPlugin

from app.api.errors import invalid_fields
from app.errors import InvalidInput
from app.services.common.inputs import too_deep


class ElephantRequest(Request[Any, Any, Any]):
    async def json(self) -> Any:
        try:
            return await super().json()
        except RecursionError:
            raise InvalidInput(too_deep(await self.body())) from None


class RequestModels(PydanticInitPlugin):
    """Litestar's pydantic plugin, with request models decoded by ``decode_model``."""

    @classmethod
    def decoders(
        cls, validate_strict: bool = False
    ) -> list[tuple[Callable[[Any], bool], Callable[[Any, Any], Any]]]:
        own = (is_model, partial(decode_model, strict=validate_strict))
        return [own, *super().decoders(validate_strict)]


def is_model(target: Any) -> bool:
    return isinstance(target, type) and issubclass(target, pydantic.BaseModel)


def decode_model(model: type[pydantic.BaseModel], value: Any, strict: bool = False) -> Any:
    """``value`` as ``model``, or InvalidInput naming each field (an exception that is no
    ValueError, so msgspec passes it on as it is)."""
    try:
        return model.model_validate(value, strict=strict)
    except pydantic.ValidationError as exc:
        fields: list[dict[str, str]] = []
        for error in exc.errors(include_input=False, include_url=False):
            field = {"message": str(error["msg"])}
            if error["loc"]:
                field["key"] = ".".join(str(part) for part in error["loc"])
            fields.append(field)
        raise invalid_fields(fields, "the request body is invalid") from None
