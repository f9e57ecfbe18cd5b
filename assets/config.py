"""Run config of the assets: what one run may choose, shown in the launchpad and recorded on the run.

Each class carries chatetl's built-in defaults; `for_settings(settings)` gives the subclass whose
defaults are the deployment's environment (CHATETL_GRAPH_DEEP, CHATETL_RAG_INCLUDE_* /
CHATETL_EXPORT_INCLUDE_* / CHATETL_INCLUDE_*, CHATETL_CHUNK_*, CHATETL_EXPORT_FORMATS,
CHATETL_EXPORT_ZIP_FORMATS, read by chatetl.settings), and assets.definitions builds the assets
with those. The values convert to the library's own types (ContentOptions, ChunkOptions,
ExportPlan), which the CLI uses too. Export formats are an enum: the launchpad offers the
names and refuses an unknown one before the run starts; values whose limits Dagster's config
types cannot say (chunk sizes) are checked when the run is launched too (`checked_at_launch`).
"""

import enum
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from dagster import AssetsDefinition, Config, DagsterInvalidConfigError
from pydantic import Field, ValidationError, create_model, model_validator

from chatetl.exports.formats import ALL_FORMATS, parse_formats
from chatetl.exports.partition import ExportPlan
from chatetl.rag.chunking import ChunkOptions
from chatetl.selection import ContentOptions
from chatetl.settings import Settings

# The export formats as config values (their own names, e.g. chat-export-json).
ExportFormat = enum.Enum("ExportFormat", [(name, name) for name in ALL_FORMATS], type=str)  # type: ignore[misc]  # the registry's names

_CHUNK_DEFAULTS = ChunkOptions()


def _names(values: list[Any]) -> list[str]:
    """Format names from config values (enum members, or their names as given)."""
    return [getattr(v, "value", v) for v in values]


C = TypeVar("C", bound=Config)


def _reasons(exc: ValidationError, prefix: str = "") -> str:
    """A validation error on one line: each field (with `prefix`) and what is wrong with it."""
    out = []
    for e in exc.errors():
        why = e["msg"].removeprefix("Value error, ")
        out.append(f"{prefix}{'.'.join(map(str, e['loc']))}: {why}" if e["loc"] else why)
    return "; ".join(out)


def _with_defaults(cls: type[C], values: dict[str, Any]) -> type[C]:
    """A subclass of `cls` (same name, same fields, same descriptions) with other defaults."""
    fields: dict[str, Any] = {
        name: (cls.model_fields[name].annotation, Field(default=value, description=cls.model_fields[name].description))
        for name, value in values.items()
    }
    return create_model(cls.__name__, __base__=cls, __module__=cls.__module__, **fields)


class NormalizedConfig(Config):
    reprocess: bool = Field(
        default=False,
        description="Normalize every upload again, even those the ledger says are unchanged (as the run tag chatetl/reprocess=true does).",
    )


class GraphConfig(Config):
    deep: bool = Field(
        default=False,
        description="Deep mode: a DecisionTrace with its TraceSteps per conversation with tool use (default: CHATETL_GRAPH_DEEP).",
    )

    @classmethod
    def for_settings(cls, settings: Settings) -> type["GraphConfig"]:
        return _with_defaults(cls, {"deep": settings.graph_deep})


class ContentConfig(Config):
    """Which internals go out beyond the visible turns of the active branch (chatetl.selection)."""

    include_reasoning: bool = Field(default=False, description="Thinking blocks, thoughts, reasoning recaps.")
    include_tools: bool = Field(default=False, description="Tool calls and tool results.")
    include_hidden: bool = Field(default=False, description="System prompts, custom instructions, memory, injected context, summaries.")
    include_branches: bool = Field(default=False, description="Abandoned branches: regenerations and edited prompts.")

    def content(self) -> ContentOptions:
        return ContentOptions(**{name: getattr(self, name) for name in ContentOptions.FIELDS})


class DocumentsConfig(ContentConfig):
    chunk_max_chars: int = Field(default=_CHUNK_DEFAULTS.max_chars, description="Largest chunk, in characters (default: CHATETL_CHUNK_MAX_CHARS).")
    chunk_overlap_chars: int = Field(
        default=_CHUNK_DEFAULTS.overlap_chars, description="Characters a chunk repeats from the previous one, at most half of the largest (default: CHATETL_CHUNK_OVERLAP_CHARS)."
    )

    def chunking(self) -> ChunkOptions:
        """The chunk options; ValueError when they do not fit together."""
        return ChunkOptions(max_chars=self.chunk_max_chars, overlap_chars=self.chunk_overlap_chars)

    @model_validator(mode="after")
    def _chunk_sizes_fit(self) -> Self:
        try:
            self.chunking()
        except ValidationError as exc:  # ChunkOptions' limits, said with this config's field names
            raise ValueError(_reasons(exc, "chunk_")) from None
        return self

    @classmethod
    def for_settings(cls, settings: Settings) -> type["DocumentsConfig"]:
        chunking = ChunkOptions.from_settings(settings)
        return _with_defaults(
            cls, {**settings.content_flags("RAG"), "chunk_max_chars": chunking.max_chars, "chunk_overlap_chars": chunking.overlap_chars}
        )


class ExportsConfig(ContentConfig):
    formats: list[ExportFormat] = Field(
        default=list(ALL_FORMATS), description="The formats written to exports/ (empty: every one; default: CHATETL_EXPORT_FORMATS, else every one)."  # type: ignore[arg-type]  # names: Dagster takes an enum value by its name
    )
    zip_formats: list[ExportFormat] = Field(
        default=list(ExportPlan().bundle_formats),  # type: ignore[arg-type]  # names, as above
        description="The formats in the partition's zip, exports/zip/; empty: no zip (default: CHATETL_EXPORT_ZIP_FORMATS).",
    )

    def plan(self) -> ExportPlan:
        return ExportPlan(formats=parse_formats(_names(self.formats)), bundle_formats=parse_formats(_names(self.zip_formats), ()))

    @classmethod
    def for_settings(cls, settings: Settings) -> type["ExportsConfig"]:
        plan = ExportPlan.from_settings(settings)
        return _with_defaults(
            cls, {**settings.content_flags("EXPORT"), "formats": list(plan.formats), "zip_formats": list(plan.bundle_formats)}
        )


def checked_at_launch(asset: AssetsDefinition, config_class: type[Config]) -> AssetsDefinition:
    """`asset` with its run config built into `config_class` when a run is launched, so a value
    the class's validators refuse fails the launch (launchpad, sensor, schedule, backfill), with
    the reason, before any step of the run.

    Dagster checks a run config's types at launch, but builds the Config (its validators) only in
    the step. A configured op's mapping function runs when Dagster makes the run's plan, before
    the run exists: this one builds the Config there and hands the values on unchanged."""
    op = asset.op

    def validated(values: Mapping[str, Any]) -> Mapping[str, Any]:
        try:
            config_class(**values)
        except ValidationError as exc:
            why = f"Error in config for asset {op.name}: {_reasons(exc)}"
            raise DagsterInvalidConfigError(why, [], dict(values)) from None  # type: ignore[no-untyped-call]  # (Dagster's, untyped)
        return values

    configured = op.configured(validated, name=op.name, config_schema=op.config_field)
    return AssetsDefinition.dagster_internal_init(**{**asset.get_attributes_dict(), "node_def": configured})
