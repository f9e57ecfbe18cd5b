"""Every key of the bucket, in one place: where each stage reads and writes.

    raw/...                                              uploads (any S3 client drops them here)
    manifests/raw_uploads/date=D.json, .../date=D/<uploader>.json   the uploads a run of day D's group saw
    normalized/<table>/date=D/<upload-id>.parquet        conversations and messages, per upload; projects,
                                                         project_docs, memories, canvases where it keeps them
    quarantine/date=D/<upload-id>/...                    what could not be read, with errors.json
    rag/documents/date=D/<upload-id>.jsonl               one Document per conversation
    rag/chunks/date=D/<upload-id>.jsonl                  its chunks for retrieval
    rag/embeddings/date=D/<upload-id>.parquet            the chunks' vectors (fixed-size float32 lists)
    attachments/sha256/<h[:2]>/<h>                       an attachment's bytes, once, by their sha256 h
    exports/<format>/<platform>-<title>-<date>-<id>.<ext>   one file per conversation and format
    exports/_conversations/<digest>.json                 which files a conversation's newest state has
    exports/sharegpt-jsonl/sharegpt-D.jsonl, exports/zip/chats-D.zip   per partition
    state/ledger/date=D.json, state/ledger/date=D/<uploader>.json   upload versions day D's group has normalized
    state/uploads/date=D/batch-<id>.json                 the upload index (the sensor's finds)
    state/uploads/coverage.json                          up to when the index is complete
    state/uploads/by-key/<upload-id>.json                which day holds an upload key's outputs
    state/attachments/by-upload/<upload-id>.json         the attachments an upload refers to
    state/attachments/by-content/<etag>-<size>.json      which member of an upload with these bytes holds which file
    state/attachments/let-go/<digest>.json               files and by-content records an upload let go, until swept
    state/attachments/in-flight/<upload-id>-<run>.json   a run resolving an upload's files (removed when it is done)
    state/attachments/sweeping/<sweep>.json              a sweep that may delete files (removed when it is done)
    state/attachments/swept.json                         the last sweep's id; its time is when it began (chatetl.attachments.sweep)
    cache/exports/date=D/<upload-id>.zip                 what an upload gave its day's zip, training file, rows
    cache/exports/date=D.json                            the export manifests' states a run of day D saw
    cache/rag/date=D/<upload-id>.json                    what an upload's rag/ files were written from

cache/ holds what lets a run redo only what changed: deleting it costs time (the next run of each day
renders and chunks everything again), never data.

Every output key is derived from the upload's key, so a rerun overwrites instead of
adding (and `chatetl.storage.put_if_changed` skips writes whose bytes are unchanged).
"""

from __future__ import annotations

import hashlib
import re

from chatetl.filenames import slug
from chatetl.storage import UnsafeKeyError, check_key

RAW_PREFIX = "raw/"
RAW_MANIFEST_PREFIX = "manifests/raw_uploads/"
NORMALIZED_PREFIX = "normalized/"
TABLES = ("conversations", "messages")
KEEPSAKE_TABLES = ("projects", "project_docs", "memories", "canvases")  # what an upload keeps beside its chats; only those it has
QUARANTINE_PREFIX = "quarantine/"
RAG_DOCUMENTS_PREFIX = "rag/documents/"
RAG_CHUNKS_PREFIX = "rag/chunks/"
RAG_EMBEDDINGS_PREFIX = "rag/embeddings/"
ATTACHMENTS_PREFIX = "attachments/sha256/"
EXPORTS_PREFIX = "exports/"
EXPORT_MANIFEST_PREFIX = f"{EXPORTS_PREFIX}_conversations/"
STATE_PREFIX = "state/"
LEDGER_PREFIX = f"{STATE_PREFIX}ledger/"
INDEX_PREFIX = f"{STATE_PREFIX}uploads/"
COVERAGE_KEY = f"{INDEX_PREFIX}coverage.json"
LOCATION_PREFIX = f"{INDEX_PREFIX}by-key/"
CACHE_PREFIX = "cache/"
ATTACHMENTS_BY_UPLOAD_PREFIX = f"{STATE_PREFIX}attachments/by-upload/"
ATTACHMENTS_BY_CONTENT_PREFIX = f"{STATE_PREFIX}attachments/by-content/"
ATTACHMENTS_LET_GO_PREFIX = f"{STATE_PREFIX}attachments/let-go/"
ATTACHMENTS_IN_FLIGHT_PREFIX = f"{STATE_PREFIX}attachments/in-flight/"
ATTACHMENTS_SWEEPING_PREFIX = f"{STATE_PREFIX}attachments/sweeping/"
ATTACHMENTS_SWEPT_KEY = f"{STATE_PREFIX}attachments/swept.json"
EXPORT_FILES_PREFIX = f"{EXPORTS_PREFIX}files/"


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


AGENTS_RAW_PREFIX = f"{RAW_PREFIX}agents/"
_UNSAFE_IN_NAME = re.compile(r"[^A-Za-z0-9._-]")


def agent_session_key(agent: str, parts: tuple[str, ...]) -> str:
    """Where `chatetl collect` keeps one coding-agent session: `raw/agents/<agent>/<project>/.../<file>`, the
    agent's own layout below its project (so the readers see the folders they read meaning from: a
    sub-agent's parent session, a project slug). Every part is made a safe name (characters outside
    `A-Za-z0-9._-` become `_`, no dot folders, at most 150 characters): a name read from disk never
    chooses a path. One session always has one key, so a grown session replaces its earlier copy."""
    return AGENTS_RAW_PREFIX + "/".join(_safe_name(part) for part in (agent, *parts))


def _safe_name(part: str) -> str:
    name = _UNSAFE_IN_NAME.sub("_", part)[:150]
    return f"_{name}" if not name or name.startswith(".") else name


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


def attachment_key(content_hash: str) -> str:
    """An attachment's bytes, by their sha256 (hex): the same file from any upload is one object."""
    if len(content_hash) != 64 or any(c not in "0123456789abcdef" for c in content_hash):
        raise ValueError(f"not a sha256: {content_hash!r}")
    return f"{ATTACHMENTS_PREFIX}{content_hash[:2]}/{content_hash}"


def attachments_of_upload_key(uid: str) -> str:
    return f"{ATTACHMENTS_BY_UPLOAD_PREFIX}{uid}.json"


def attachments_of_content_key(digest: str) -> str:
    """What an upload's members hold (member -> sha256), by the upload's own content digest (`<etag>-<size>`)."""
    if not digest or len(digest) > 100 or any(c not in "0123456789abcdef-" for c in digest):
        raise ValueError(f"not an upload digest: {digest!r}")
    return f"{ATTACHMENTS_BY_CONTENT_PREFIX}{digest}.json"


def attachments_let_go_key(digest: str) -> str:
    """What an upload let go (chatetl.attachments.sweep), named by the record's own digest."""
    return f"{ATTACHMENTS_LET_GO_PREFIX}{digest}.json"


def attachments_in_flight_key(uid: str, run: str) -> str:
    """A run resolving upload `uid`'s files; `run` tells two runs of one upload apart."""
    return f"{ATTACHMENTS_IN_FLIGHT_PREFIX}{uid}-{run}.json"


def attachments_sweeping_key(sweep: str) -> str:
    """A sweep under way (chatetl.attachments.sweep); `sweep` is its own id."""
    return f"{ATTACHMENTS_SWEEPING_PREFIX}{sweep}.json"


def export_file_prefix(content_hash: str) -> str:
    """The exported copies of an attachment (`exports/files/<sha256><ext>`)."""
    attachment_key(content_hash)
    return f"{EXPORT_FILES_PREFIX}{content_hash}"


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


def export_pieces_prefix(day: str) -> str:
    """What each upload of day D gave the day's bundles (chatetl.exports.pieces)."""
    return f"{CACHE_PREFIX}exports/date={day}/"


def export_piece_key(day: str, uid: str) -> str:
    return f"{export_pieces_prefix(day)}{uid}.zip"


def export_states_key(day: str) -> str:
    """The export manifests' states (and ETags) the last exports run of day D left."""
    return f"{CACHE_PREFIX}exports/date={day}.json"


def rag_stamps_prefix(day: str) -> str:
    return f"{CACHE_PREFIX}rag/date={day}/"


def rag_stamp_key(day: str, uid: str) -> str:
    """What the upload's rag/ files were written from, and what its Documents hold (chatetl.rag.stamps)."""
    return f"{rag_stamps_prefix(day)}{uid}.json"
