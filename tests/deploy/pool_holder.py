"""A code location for tests/deploy/test_pool_slots.py: one asset in the project's `neo4j` pool that
writes its process id and holds its pool slot while a `hold` file exists in $POOL_HOLDER_DIR.

Its run runs in one process (the in-process executor), so that process, the run worker, holds the
slot: killing it is a run worker dying with the slot in hand."""

import os
import time
from pathlib import Path

from dagster import AssetExecutionContext, Definitions, asset, define_asset_job, in_process_executor

from assets.policies import NEO4J_POOL


@asset(pool=NEO4J_POOL)
def holder(context: AssetExecutionContext) -> None:
    folder = Path(os.environ["POOL_HOLDER_DIR"])
    (folder / f"{context.run_id}.pid").write_text(str(os.getpid()))
    while (folder / "hold").exists():
        time.sleep(0.2)


hold_job = define_asset_job("hold_job", selection=[holder], executor_def=in_process_executor)
defs = Definitions(assets=[holder], jobs=[hold_job])
