"""Imported before pyarrow in a process that only reads and writes local tables (`chatetl normalize`
and the engine's workers, chatetl.normalize.processes): pyarrow then loads without numpy and its cloud
filesystems, and libarrow makes its memory pool from the system allocator; the process's peak memory
is a third lower (bench/RESULTS.md). Never imported by a library module: only a process that owns all
its imports may close numpy.

pyarrow imports numpy whenever it is installed, though building, writing and reading these tables never
use it, and `pyarrow.parquet` imports `pyarrow.fs`, which loads every cloud filesystem it finds; a
module set to None in `sys.modules` cannot be imported, and `pyarrow.fs` takes a filesystem module that
cannot be imported as one that is not built. The memory pool is chosen by libarrow when it makes its
default pool, from ARROW_DEFAULT_MEMORY_POOL (left alone when the environment sets it). Nothing here
applies once pyarrow is loaded, and nothing else runs in the processes that import this first.
"""

import os
import sys

# `import numpy` (and each of these) raises ImportError
for _name in ("numpy", "pyarrow._s3fs", "pyarrow._azurefs", "pyarrow._hdfs", "pyarrow._gcsfs"):
    sys.modules.setdefault(_name, None)  # type: ignore[arg-type]

if "pyarrow" not in sys.modules:
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
