"""Memory settings of the embedded server, chosen from the machine's memory.

PostgreSQL's default shared_buffers (128 MB) holds a fraction of the vector indexes of a
100k-memory tenant (~650 MB of HNSW): a fifth of index reads then miss, and search took
1.5x as long as with 1 GB. The embedded server is sized for its job instead:

==========================  ==============================================  ==========
setting                     default (RAM = the machine's or the cgroup's)  bounds
==========================  ==============================================  ==========
shared_buffers              embedded.memory_share x RAM (0.25)              128 MB-4 GB
effective_cache_size        RAM / 2                                         >= shared
maintenance_work_mem        RAM / 16 (HNSW and BM25 builds)                 64 MB-1 GB
==========================  ==============================================  ==========

Each can be set instead (``embedded.shared_buffers_mb`` and the others).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MB = 1024 * 1024
SHARED_BUFFERS_MB = (128, 4096)
MAINTENANCE_WORK_MEM_MB = (64, 1024)
_CGROUP_LIMITS = (
    Path("/sys/fs/cgroup/memory.max"),
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
)


@dataclass(frozen=True, slots=True)
class MemorySizes:
    """Megabytes of each setting, as written to the server's configuration."""

    shared_buffers_mb: int
    effective_cache_size_mb: int
    maintenance_work_mem_mb: int

    def settings(self) -> dict[str, str]:
        return {
            "shared_buffers": f"'{self.shared_buffers_mb}MB'",
            "effective_cache_size": f"'{self.effective_cache_size_mb}MB'",
            "maintenance_work_mem": f"'{self.maintenance_work_mem_mb}MB'",
        }


def machine_memory_bytes() -> int:
    """Physical memory, or the cgroup's limit when that is lower (a container)."""
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    for path in _CGROUP_LIMITS:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < total:
            total = int(text)
    return int(total)


def _clamp(value: int, bounds: tuple[int, int]) -> int:
    return max(bounds[0], min(bounds[1], value))


def choose(
    memory_bytes: int,
    *,
    share: float = 0.25,
    shared_buffers_mb: int | None = None,
    effective_cache_size_mb: int | None = None,
    maintenance_work_mem_mb: int | None = None,
) -> MemorySizes:
    """The sizes for a machine of ``memory_bytes``; a value given wins over the rule."""
    ram_mb = max(memory_bytes // MB, 1)
    shared = shared_buffers_mb or _clamp(int(ram_mb * share), SHARED_BUFFERS_MB)
    cache = effective_cache_size_mb or max(shared, ram_mb // 2)
    maintenance = maintenance_work_mem_mb or _clamp(ram_mb // 16, MAINTENANCE_WORK_MEM_MB)
    return MemorySizes(shared, cache, maintenance)
