"""Imported first in the two-core path's worker processes (their forkserver's preload, see
chatetl.readers.parallel) and by `chatetl normalize` (chatetl.cli, before its first pyarrow import):
pyarrow, imported next, then runs without numpy.

pyarrow imports numpy whenever it is installed, though reading and writing the tables never use
it: numpy is 21 MB of a worker's 128 MB and a fifth of its imports' time (measured here, pyarrow
26). Only a process that has not imported numpy yet is changed, and only these processes import
this module: nothing in them needs numpy (tests/readers/test_parallel.py runs them).
"""

import sys

sys.modules.setdefault("numpy", None)  # type: ignore[arg-type]  # `import numpy` raises ImportError
