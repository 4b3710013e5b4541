"""Turning costs into what people read: text tables, JSON documents, plots."""
