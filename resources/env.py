"""Resource fields that come from the environment (`EnvVar`), read where Dagster does not read them."""

from __future__ import annotations

from typing import Any, TypeVar

from dagster import ConfigurableResource, EnvVar

from chatetl.settings import SettingError

R = TypeVar("R", bound="ConfigurableResource[Any]")


def resolved(resource: R) -> R:
    """`resource` with every EnvVar field (nested resources too) holding its value.

    Dagster reads EnvVars when it initializes a resource for a run, a sensor or a schedule;
    a resource used directly (a test, a script, `defs.resources[...]`) still holds the names,
    so it is read here. A resource without EnvVars is returned as it is.
    """
    values, changed = {}, False
    for name in type(resource).model_fields:
        value = getattr(resource, name)
        if isinstance(value, EnvVar):
            read = value.get_value()
            if read is None:
                raise SettingError(f"{value.env_var_name} is not set ({type(resource).__name__}.{name} comes from it)")
            value, changed = read, True
        elif isinstance(value, ConfigurableResource):
            inner = resolved(value)
            value, changed = inner, changed or inner is not value
        values[name] = value
    return type(resource)(**values) if changed else resource
