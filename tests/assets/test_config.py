"""The assets' run config (assets/config.py): the library's built-in defaults, the environment's
as defaults where set, and conversion to the library's types (which validate)."""

from __future__ import annotations

import pytest

from assets.config import DocumentsConfig, ExportsConfig, GraphConfig, NormalizedConfig
from chatetl.exports.formats import ALL_FORMATS
from chatetl.exports.partition import ExportPlan
from chatetl.rag.chunking import ChunkOptions
from chatetl.selection import ContentOptions
from chatetl.settings import SettingError, Settings


def test_built_in_defaults_are_the_librarys():
    assert NormalizedConfig().reprocess is False and GraphConfig().deep is False
    docs = DocumentsConfig()
    assert docs.content() == ContentOptions() and docs.chunking() == ChunkOptions()
    ex = ExportsConfig()
    assert ex.plan() == ExportPlan() and ex.content() == ContentOptions()


def test_the_environment_gives_the_defaults():
    env = {"CHATETL_GRAPH_DEEP": "1", "CHATETL_INCLUDE_REASONING": "yes", "CHATETL_EXPORT_INCLUDE_REASONING": "no",
           "CHATETL_CHUNK_MAX_CHARS": "1000", "CHATETL_CHUNK_OVERLAP_CHARS": "100",
           "CHATETL_EXPORT_FORMATS": "yaml,md", "CHATETL_EXPORT_ZIP_FORMATS": "all"}
    s = Settings.from_env(env)
    assert GraphConfig.for_settings(s)().deep is True
    docs = DocumentsConfig.for_settings(s)()
    assert docs.content() == ContentOptions(include_reasoning=True) and docs.chunking() == ChunkOptions(max_chars=1000, overlap_chars=100)
    ex = ExportsConfig.for_settings(s)()
    assert ex.plan() == ExportPlan(formats=("md", "yaml"), bundle_formats=ALL_FORMATS) and ex.content() == ContentOptions()
    assert ExportsConfig.for_settings(Settings.from_env({"CHATETL_EXPORT_ZIP_FORMATS": "none"}))().plan().bundle_formats == ()
    # a run chooses otherwise
    assert GraphConfig.for_settings(s)(deep=False).deep is False
    assert ExportsConfig.for_settings(s)(formats=["html"], zip_formats=[]).plan() == ExportPlan(formats=("html",), bundle_formats=())


def test_bad_values_are_refused_with_the_name():
    with pytest.raises(SettingError, match="CHATETL_EXPORT_FORMATS='md,pdf'.*pdf"):
        ExportsConfig.for_settings(Settings.from_env({"CHATETL_EXPORT_FORMATS": "md,pdf"}))
    with pytest.raises(ValueError, match="pdf"):
        ExportsConfig(formats=["pdf"])
    with pytest.raises(ValueError, match="overlap_chars"):
        DocumentsConfig(chunk_max_chars=100, chunk_overlap_chars=80).chunking()
