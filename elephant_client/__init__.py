"""Typed Python client for the Elephant REST API (sync and async)."""
