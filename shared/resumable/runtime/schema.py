"""Checking a value against a tool's JSON Schema: an edited input before it is recorded (the service)
and before it runs (the runtime). Nothing is fetched: a ``$ref`` must resolve inside the schema.
jsonschema is imported only when a check is asked for (an edit), so a cold start never pays for it."""

from __future__ import annotations

from typing import Any


def schema_problem(value: Any, schema: Any) -> str | None:
    """Why ``value`` does not match ``schema`` (where, and what), or None if it does. A schema that is
    not a valid JSON Schema, or that refers outside itself, is a problem too (nothing matches it)."""
    import jsonschema  # type: ignore[import-untyped]  # (no stubs pinned)
    import referencing
    import referencing.exceptions

    if not isinstance(schema, dict):
        return "the tool declares no input schema to check it against"
    try:
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
        validator = validator_class(
            schema, registry=referencing.Registry(), format_checker=validator_class.FORMAT_CHECKER
        )
        found = jsonschema.exceptions.best_match(validator.iter_errors(value))
    except jsonschema.SchemaError as error:
        return f"the tool's input schema is not valid ({error.message})"
    except referencing.exceptions.Unresolvable as error:
        return f"the tool's input schema refers to {error!s}, which is not inside it"
    if found is None:
        return None
    where = "/".join(str(p) for p in found.absolute_path) or "the input"
    return f"at {where}: {found.message}"
