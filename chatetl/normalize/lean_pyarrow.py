"""Imported first in the two-core path's worker processes (their forkserver's preload, see
chatetl.normalize.pool) and by `chatetl normalize` (chatetl.cli, before its first pyarrow import):
pyarrow, imported next, then runs without numpy and without its cloud filesystems, on the system allocator.

pyarrow imports numpy whenever it is installed, though reading and writing the tables never use
it: numpy is 21 MB of a worker's 128 MB and a fifth of its imports' time (measured here, pyarrow
26). `pyarrow.parquet` imports `pyarrow.fs`, which loads the S3, Azure, HDFS and GCS filesystems
it finds; these processes write local files (S3 is read and written with boto3), and
`libarrow_s3` alone is ~7 MB of resident pages and 3 ms of the imports (a 20 MB normalize: peak RSS
131 -> 124 MB). `pyarrow.fs` takes a filesystem module that cannot be imported as one that is
not built, so `LocalFileSystem` and the rest stay.

Arrow's memory pool: the system allocator (glibc malloc) instead of the bundled mimalloc, which held more
memory here. Only the `ARROW_DEFAULT_MEMORY_POOL` variable, read when libarrow makes its default pool,
reaches the C++ side (the Parquet writer's buffers, the IPC reader); `pyarrow.set_memory_pool` moves
pyarrow's Python-level default only and measured no change. Measured on ChatGPT-shaped files, peak RSS
mimalloc -> system: 200 MB, 3 alternating runs, the two-core main process 111-115 -> 97-101 MB (anonymous
68-72 -> 55-59 MB), one process 97-98 -> 91-95 MB; 1 GB, one run, two cores 117 -> 102 MB; times within
noise. Set only when the environment has not chosen a pool (`ARROW_DEFAULT_MEMORY_POOL=mimalloc` keeps the
old one), and only if pyarrow is not loaded yet; the workers' forkserver, which imports this module, passes
it on to them.

Only a module not imported yet is closed, and only these processes import this module: nothing in them needs
what it closes (tests/readers/test_parallel.py and tests/cli/test_normalize.py run them).
"""

import os
import sys

# `import numpy` (and each of these) raises ImportError
for _name in ("numpy", "pyarrow._s3fs", "pyarrow._azurefs", "pyarrow._hdfs", "pyarrow._gcsfs"):
    sys.modules.setdefault(_name, None)  # type: ignore[arg-type]

if "pyarrow" not in sys.modules:
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
