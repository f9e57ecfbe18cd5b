"""The normalized tables: canonical conversations as Parquet, and back.

`conversations` has one row per conversation, `messages` one row per message (every branch, every
kind). Rows are written in batches as conversations stream by, so memory stays bounded by the batch
size, not the upload; messages of one conversation are contiguous, so later stages stream them back
grouped. `schema` (the contract), `encode` (conversations into columns), `writer` (the files),
`decode` (the model back), `states` (each state without its messages), `partitions` (a day's files
in the bucket).
"""

from chatetl.tables.decode import (
    READ_BACK_ROWS,
    BinaryIOLike,
    iter_conversations,
    read_rows,
)
from chatetl.tables.encode import TableBatch, stored_state_hash
from chatetl.tables.partitions import (
    download_table,
    iter_partition,
    iter_partition_files,
    partition_table_pairs,
)
from chatetl.tables.schema import CONVERSATIONS_SCHEMA, MESSAGES_SCHEMA, TS
from chatetl.tables.states import (
    STATE_COLUMNS,
    ConversationState,
    partition_states,
    table_states,
)
from chatetl.tables.writer import PartsWriter, TableWriter

__all__ = [
    "CONVERSATIONS_SCHEMA", "MESSAGES_SCHEMA", "READ_BACK_ROWS", "STATE_COLUMNS", "TS", "BinaryIOLike", "ConversationState",
    "PartsWriter", "TableBatch", "TableWriter", "download_table", "iter_conversations", "iter_partition", "iter_partition_files",
    "partition_states", "partition_table_pairs", "read_rows", "stored_state_hash", "table_states",
]
