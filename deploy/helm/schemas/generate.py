"""Kubernetes JSON schemas for kubeconform, made once from Kubernetes' own OpenAPI document.

    python deploy/helm/schemas/generate.py SWAGGER_JSON VERSION

writes `VERSION-standalone-strict/<kind>-<group>-<version>.json` beside this file for the kinds
the chart renders (KINDS), named as kubeconform looks them up. Each schema stands alone (every
`$ref` expanded in place), is strict (an object with properties takes no other key, so a typo
in a manifest fails), lets an optional field be null, pins `apiVersion` and `kind`, and keeps
no descriptions (validation does not read them). check.sh only reads the result: nothing is
fetched when the chart is checked. VENDORED.md says where SWAGGER_JSON comes from.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

# (group, version, kind) of every object the chart renders
KINDS = (
    ("", "v1", "ConfigMap"),
    ("", "v1", "Secret"),
    ("", "v1", "Service"),
    ("", "v1", "ServiceAccount"),
    ("apps", "v1", "Deployment"),
    ("apps", "v1", "StatefulSet"),
    ("batch", "v1", "Job"),
    ("rbac.authorization.k8s.io", "v1", "Role"),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
)

INT_OR_STRING = {"oneOf": [{"type": "string"}, {"type": "integer"}]}

Schema = dict[str, Any]


def file_name(group: str, version: str, kind: str) -> str:
    """kubeconform's `{{ .ResourceKind }}{{ .KindSuffix }}.json`: the group's first label, if any."""
    suffix = f"-{group.split('.')[0]}-{version}" if group else f"-{version}"
    return f"{kind.lower()}{suffix}.json"


def expand(node: Schema, definitions: dict[str, Schema], seen: tuple[str, ...] = ()) -> Schema:
    """`node` with its references expanded, strict and without descriptions."""
    if "$ref" in node:
        name = node["$ref"].removeprefix("#/definitions/")
        if name in seen:  # a recursive type (none of KINDS has one): accept anything below it
            return {}
        return expand(definitions[name], definitions, (*seen, name))
    if node.get("format") == "int-or-string":
        return dict(INT_OR_STRING)
    out: Schema = {k: v for k, v in node.items() if k not in ("description", "x-kubernetes-group-version-kind")}
    if "properties" in node:
        required = set(node.get("required", ()))
        properties = {}
        for name, child in node["properties"].items():
            schema = expand(child, definitions, seen)
            properties[name] = schema if name in required else nullable(schema)
        out["properties"] = properties
        out.setdefault("additionalProperties", False)
    if isinstance(node.get("items"), dict):
        out["items"] = expand(node["items"], definitions, seen)
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = expand(node["additionalProperties"], definitions, seen)
    return out


def nullable(schema: Schema) -> Schema:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {**schema, "type": [kind, "null"]}
    if "oneOf" in schema:
        return {**schema, "oneOf": [*schema["oneOf"], {"type": "null"}]}
    return schema


def kind_schema(definitions: dict[str, Schema], group: str, version: str, kind: str) -> Schema:
    for name, definition in definitions.items():
        if {"group": group, "version": version, "kind": kind} in definition.get("x-kubernetes-group-version-kind", ()):
            schema = expand(definition, definitions, (name,))
            api_version = f"{group}/{version}" if group else version
            schema["properties"]["apiVersion"] = {"type": "string", "enum": [api_version]}
            schema["properties"]["kind"] = {"type": "string", "enum": [kind]}
            schema["required"] = sorted({*schema.get("required", ()), "apiVersion", "kind"})
            return {"$schema": "http://json-schema.org/schema#", **schema}
    raise SystemExit(f"{group}/{version} {kind}: not in the OpenAPI document")


def main(swagger: Path, version: str) -> None:
    definitions = json.loads(swagger.read_text())["definitions"]
    folder = Path(__file__).resolve().parent / f"{version}-standalone-strict"
    folder.mkdir(exist_ok=True)
    for group, api_version, kind in KINDS:
        schema = kind_schema(definitions, group, api_version, kind)
        (folder / file_name(group, api_version, kind)).write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
