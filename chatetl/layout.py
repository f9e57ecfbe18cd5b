"""Every key of the bucket, in one place: where each stage reads and writes.

    raw/...                                              uploads (any S3 client drops them here)
    manifests/raw_uploads/date=D.json, .../date=D/<uploader>.json   the uploads a run of day D's group saw
    normalized/<table>/date=D/<upload-id>.parquet        conversations and messages, per upload
    quarantine/date=D/<upload-id>/...                    what could not be read, with errors.json
    rag/documents/date=D/<upload-id>.jsonl               one Document per conversation
    rag/chunks/date=D/<upload-id>.jsonl                  its chunks for retrieval
    rag/embeddings/date=D/<upload-id>.parquet            the chunks' vectors (fixed-size float32 lists)
    exports/<format>/<platform>-<title>-<date>-<id>.<ext>   one file per conversation and format
    exports/_conversations/<digest>.json                 which files a conversation's newest state has
    exports/sharegpt-jsonl/sharegpt-D.jsonl, exports/zip/chats-D.zip   per partition
    state/ledger/date=D.json, state/ledger/date=D/<uploader>.json   upload versions day D's group has normalized
    state/uploads/date=D/batch-<id>.json                 the upload index (the sensor's finds)
    state/uploads/coverage.json                          up to when the index is complete
    state/uploads/by-key/<upload-id>.json                which day holds an upload key's outputs

Every output key is derived from the upload's key, so a rerun overwrites instead of
adding (and `chatetl.storage.put_if_changed` skips writes whose bytes are unchanged).
"""

from __future__ import annotations

import hashlib

from chatetl.filenames import slug
from chatetl.storage import UnsafeKeyError, check_key

RAW_PREFIX = "raw/"
RAW_MANIFEST_PREFIX = "manifests/raw_uploads/"
NORMALIZED_PREFIX = "normalized/"
TABLES = ("conversations", "messages")
QUARANTINE_PREFIX = "quarantine/"
RAG_DOCUMENTS_PREFIX = "rag/documents/"
RAG_CHUNKS_PREFIX = "rag/chunks/"
RAG_EMBEDDINGS_PREFIX = "rag/embeddings/"
EXPORTS_PREFIX = "exports/"
EXPORT_MANIFEST_PREFIX = f"{EXPORTS_PREFIX}_conversations/"
STATE_PREFIX = "state/"
LEDGER_PREFIX = f"{STATE_PREFIX}ledger/"
INDEX_PREFIX = f"{STATE_PREFIX}uploads/"
COVERAGE_KEY = f"{INDEX_PREFIX}coverage.json"
LOCATION_PREFIX = f"{INDEX_PREFIX}by-key/"


def is_upload(key: str) -> bool:
    """Keys under raw/ that are uploads: not the folder markers some S3 clients create, nor
    keys no stage may use (`..`, backslashes, ...: chatetl.storage.check_key)."""
    if not key.startswith(RAW_PREFIX) or key.endswith("/"):
        return False
    try:
        check_key(key)
    except UnsafeKeyError:
        return False
    return True


def upload_id(key: str) -> str:
    """A file-name-safe, unique, stable id for an upload key."""
    stem = key.removeprefix(RAW_PREFIX)
    return f"{slug(stem.replace('/', '-'), 60)}-{hashlib.sha256(key.encode()).hexdigest()[:10]}"


def group_file(uploader: str) -> str:
    """A file name for an uploader (chatetl.ingest.groups), never chosen by the upload's name alone."""
    return f"{slug(uploader, 40)}-{hashlib.sha256(uploader.encode()).hexdigest()[:10]}.json"


def raw_manifest_key(day: str, uploader: str = "") -> str:
    """The uploads a run of a day's group saw: the uploads at the top of raw/, or one uploader's."""
    return f"{RAW_MANIFEST_PREFIX}date={day}.json" if not uploader else f"{RAW_MANIFEST_PREFIX}date={day}/{group_file(uploader)}"


def table_prefix(table: str, day: str) -> str:
    return f"{NORMALIZED_PREFIX}{table}/date={day}/"


def table_key(table: str, day: str, uid: str) -> str:
    return f"{table_prefix(table, day)}{uid}.parquet"


def quarantine_prefix(day: str, uid: str) -> str:
    return f"{QUARANTINE_PREFIX}date={day}/{uid}/"


def document_keys(day: str, uid: str) -> tuple[str, str, str]:
    """The upload's Documents and chunks (JSON Lines) and its chunks' vectors (Parquet)."""
    return f"{RAG_DOCUMENTS_PREFIX}date={day}/{uid}.jsonl", f"{RAG_CHUNKS_PREFIX}date={day}/{uid}.jsonl", embeddings_key(day, uid)


def embeddings_key(day: str, uid: str) -> str:
    """The upload's chunk vectors (Parquet), beside its chunks."""
    return f"{RAG_EMBEDDINGS_PREFIX}date={day}/{uid}.parquet"


def export_prefix(fmt: str) -> str:
    return f"{EXPORTS_PREFIX}{fmt}/"


def export_manifest_key(conversation_key: str) -> str:
    """A conversation's export manifest (its state version and files per format)."""
    digest = hashlib.sha256(conversation_key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{EXPORT_MANIFEST_PREFIX}{digest}.json"


def training_key(day: str, training_format: str = "sharegpt-jsonl") -> str:
    return f"{export_prefix(training_format)}sharegpt-{day}.jsonl"


def bundle_key(day: str) -> str:
    return f"{export_prefix('zip')}chats-{day}.zip"


def ledger_key(day: str, uploader: str = "") -> str:
    """The ledger of a day's uploads at the top of raw/, or of one uploader's (its first folder under raw/)."""
    return f"{LEDGER_PREFIX}date={day}.json" if not uploader else f"{LEDGER_PREFIX}date={day}/{group_file(uploader)}"


def location_key(uid: str) -> str:
    return f"{LOCATION_PREFIX}{uid}.json"


def index_prefix(day: str) -> str:
    return f"{INDEX_PREFIX}date={day}/"
