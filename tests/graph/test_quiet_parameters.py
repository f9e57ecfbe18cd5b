"""Statement parameters go to Neo4j as given, without the driver printing them (chatetl.graph.connection.quiet)."""

from __future__ import annotations

import logging

from chatetl.graph.connection import QuietList, quiet, run_read


def test_quiet_parameters_reach_the_server_unchanged_and_print_short(neo4j_driver, caplog):
    texts = [f"text {i} " + "é" * i for i in range(300)]
    nested = [[float(i), i / 3, -1e-300] for i in range(300)]
    rows = [{"key": f"k{i}", "props": {"n": i, "ok": i % 2 == 0, "none": None}} for i in range(300)]
    params = quiet({"texts": texts, "nested": nested, "rows": rows, "limit": 7, "name": "x"})
    assert all(type(params[k]) is QuietList for k in ("texts", "nested", "rows")) and params["limit"] == 7
    assert repr(params["texts"]) == "<list of 300>" and params["texts"] == texts
    with caplog.at_level(logging.DEBUG, logger="neo4j"):
        [back] = run_read(neo4j_driver, None, "RETURN $texts AS texts, $nested AS nested, $rows AS rows, $limit AS limit",
                          texts=texts, nested=nested, rows=rows, limit=7)
    assert back == {"texts": texts, "nested": nested, "rows": rows, "limit": 7}
    logged = "\n".join(r.getMessage() for r in caplog.records if "RUN" in r.getMessage())
    assert "<list of 300>" in logged and "text 299" not in logged  # (the debug log, when on, holds no chat text)
