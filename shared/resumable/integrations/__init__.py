"""Integrations with other agent SDKs: each implements the runtime's seam (resumable.runtime.seam) and
imports its SDK only when it is itself imported (``import resumable`` never imports one)."""
