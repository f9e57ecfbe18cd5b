"""What every sample is made of: one base time, ids that depend only on their parts, and zips
whose bytes depend only on their files, so that building a sample twice gives the same bytes."""

from __future__ import annotations

import io
import uuid
import zipfile
from collections.abc import Mapping
from typing import Any

BASE_TIME = 1767225600.0  # 2026-01-01T00:00:00Z


def zip_files(files: Mapping[str, bytes | str]) -> bytes:
    """A zip whose bytes depend only on its files (fixed member times), so re-uploading it is a no-op."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buf.getvalue()


def sample_id(*parts: Any) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "chatetl-sample:" + "/".join(map(str, parts))))
