"""Configuration overrides by dotted name: the one way a sweep's tuning grid and chosen settings change a config.

An override is `{name: value}` on a JSON-like dict of config fields. A plain name (`learning_rate`)
replaces that field; a dotted name (`env_overrides.length`, `credit_options.baseline`) replaces one
key of a field that is itself a JSON object (a dict, or a list of `(key, value)` pairs as
`env_overrides` may be written), creating the object when the field is absent. Whether the result
is a valid config is the config's own check (`jaxcredit.train.config_from_dict`).
"""

from __future__ import annotations


def apply_overrides(values: dict, overrides: dict) -> dict:
    """A copy of `values` with every override applied, in order; raises `ValueError` on a name that
    is not a string of dot-separated parts, or a dotted name whose field is not a JSON object."""
    out = dict(values)
    for name, value in overrides.items():
        parts = name.split(".") if isinstance(name, str) else []
        if not parts or not all(parts):
            raise ValueError(f"override {name!r}: a field name, or FIELD.KEY for one key of a field that is an object")
        out = _set(out, parts, value, name)
    return out


def _set(values: dict, parts: list, value, name: str) -> dict:
    if len(parts) == 1:
        return {**values, parts[0]: value}
    inner = values.get(parts[0])
    if inner is None:
        inner = {}
    elif isinstance(inner, (list, tuple)) and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in inner):
        inner = {k: v for k, v in inner}
    if not isinstance(inner, dict):
        raise ValueError(f"override {name!r}: field {parts[0]!r} is {inner!r}, not an object of keys")
    return {**values, parts[0]: _set(inner, parts[1:], value, name)}


def overrides_text(overrides: dict) -> str:
    """`"learning_rate=0.001, entropy_coef=0.01"` (`"defaults"` for none): an override in words."""
    return ", ".join(f"{name}={value}" for name, value in overrides.items()) or "defaults"
