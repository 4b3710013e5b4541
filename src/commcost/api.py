"""The public API (filled in below)."""
