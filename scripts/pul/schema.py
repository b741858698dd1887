"""A JSON Schema validator for the few keywords scripts/results.schema.json uses (standard library only).

The driver runs on a bare Python 3 (CONTRIBUTING.md), so it cannot import `jsonschema`; the tests
can, and check that this validator and theirs agree on the committed results and on broken copies
of them. `check_schema` refuses a schema with any keyword this file does not implement, so a new
keyword in results.schema.json fails loudly (scripts/tests/test_results_schema.py) instead of
being ignored while the schema looks stricter than the check.

Implemented, as JSON Schema draft 2020-12 defines them: type (one name or a list), required,
properties, additionalProperties (a schema or a boolean), items (one schema), const, enum,
pattern (Python `re`, searched; a final `$` anchors at the very end, as in ECMA-262), minimum,
minLength and minItems. Annotations ($schema, $id, title, description) are ignored.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

SUPPORTED = frozenset({"type", "required", "properties", "additionalProperties", "items", "const", "enum",
                       "pattern", "minimum", "minLength", "minItems"})
ANNOTATIONS = frozenset({"$schema", "$id", "title", "description"})


class SchemaError(ValueError):
    """The schema itself uses something this validator does not implement."""


def load(path: Path) -> dict:
    schema = json.loads(path.read_text())
    check_schema(schema, str(path))
    return schema


def check_schema(schema, where: str = "#") -> None:
    if isinstance(schema, bool):
        return
    if not isinstance(schema, dict):
        raise SchemaError(f"{where}: a schema must be an object or a boolean")
    unknown = sorted(set(schema) - SUPPORTED - ANNOTATIONS)
    if unknown:
        raise SchemaError(f"{where}: keyword(s) {', '.join(unknown)} not implemented by pul/schema.py")
    for name, sub in schema.get("properties", {}).items():
        check_schema(sub, f"{where}/properties/{name}")
    for keyword in ("additionalProperties", "items"):
        if keyword in schema:
            check_schema(schema[keyword], f"{where}/{keyword}")


def _is_type(value, name: str) -> bool:
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "number":
        return number
    if name == "integer":
        return number and (isinstance(value, int) or (math.isfinite(value) and value.is_integer()))
    raise SchemaError(f"unknown type {name!r}")


def _equal(a, b) -> bool:
    """JSON equality: 1 == 1.0, but true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def _pattern(pattern: str) -> re.Pattern:
    # In ECMA-262 (JSON Schema's regex dialect) `$` matches only at the very end; in Python it also
    # matches before a final newline, which would let "01-x\n" through "^[0-9]{2}-[a-z0-9-]+$".
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)


def _short(value) -> str:
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 60 else text[:57] + "..."


def errors(instance, schema, path: str = "") -> list[str]:
    """Every way `instance` fails `schema`, each as `where: what` (empty when it is valid)."""
    where = path or "(the file)"
    if schema is True:
        return []
    if schema is False:
        return [f"{where}: not allowed here"]
    found: list[str] = []
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is_type(instance, n) for n in names):
            return [f"{where}: must be {' or '.join(names)} (got {_short(instance)})"]
    if "const" in schema and not _equal(instance, schema["const"]):
        found.append(f"{where}: must be {_short(schema['const'])} (got {_short(instance)})")
    if "enum" in schema and not any(_equal(instance, e) for e in schema["enum"]):
        found.append(f"{where}: must be one of {', '.join(map(_short, schema['enum']))} (got {_short(instance)})")
    if isinstance(instance, str):
        if "minLength" in schema and len(instance) < schema["minLength"]:
            found.append(f"{where}: must have at least {schema['minLength']} character(s)")
        if "pattern" in schema and not _pattern(schema["pattern"]).search(instance):
            found.append(f"{where}: {_short(instance)} does not match {schema['pattern']}")
    if isinstance(instance, (int, float)) and not isinstance(instance, bool):
        if "minimum" in schema and not instance >= schema["minimum"]:
            found.append(f"{where}: must be at least {schema['minimum']} (got {_short(instance)})")
    if isinstance(instance, list):
        if "minItems" in schema and len(instance) < schema["minItems"]:
            found.append(f"{where}: must have at least {schema['minItems']} item(s)")
        if "items" in schema:
            for index, item in enumerate(instance):
                found += errors(item, schema["items"], f"{path}[{index}]")
    if isinstance(instance, dict):
        for key in schema.get("required", []):
            if key not in instance:
                found.append(f"{where}: missing {key!r}")
        properties = schema.get("properties", {})
        for key, value in instance.items():
            inner = f"{path}.{key}" if path else key
            if key in properties:
                found += errors(value, properties[key], inner)
            elif "additionalProperties" in schema:
                found += errors(value, schema["additionalProperties"], inner)
    return found
