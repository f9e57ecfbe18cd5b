"""Attachments as data: the files an upload holds for its chats, found by name and stored once by content.

`find` matches an attachment to the member of its upload that holds its bytes (each platform's layout),
`sniff` names the bytes' type, `store` keeps them once under their sha256 (chatetl.layout.attachment_key),
`inline` finds the files a chat file carries as data: URLs (Open WebUI),
`tables` sets each attachment's `content_hash` in an upload's new tables; what no member holds stays
an attachment whose file the export did not contain.
"""

from chatetl.attachments.tables import AttachmentCounts, resolve_attachments

__all__ = ["AttachmentCounts", "resolve_attachments"]
