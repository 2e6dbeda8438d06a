"""Names on the wire shared by the server and its clients (the CLI's link to a running
server, the benchmarks): spelled once, below every layer that speaks HTTP.

``JSONObject`` names what is genuinely free-form JSON on the wire or in a jsonb column
(an error's details, an audit row's detail, a model's JSON answer, a server's reply):
the one alias for it, so a signature says what the value is without inventing a shape.
"""

from __future__ import annotations

from typing import Any, TypeAlias

# An all-tenant key (or keyless local mode) names the tenant a request acts for here.
TENANT_HEADER = "X-Elephant-Tenant"

JSONObject: TypeAlias = dict[str, Any]
"""A JSON object with free-form members (from json.loads, or bound for json.dumps)."""
