"""Adapters of the memory systems benchmarks/peers.py compares Elephant with.

Each module holds one peer (or two close ones) behind the Peer protocol of base.py.
Their packages are the `peers` extra (`make peers`, into .venv-peers); a module whose
package is missing raises base.Unavailable with the reason, and the run reports it.
"""
