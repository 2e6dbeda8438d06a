"""Names on the wire shared by the server and its clients (the CLI's link to a running
server, the benchmarks): spelled once, below every layer that speaks HTTP."""

from __future__ import annotations

# An all-tenant key (or keyless local mode) names the tenant a request acts for here.
TENANT_HEADER = "X-Elephant-Tenant"
