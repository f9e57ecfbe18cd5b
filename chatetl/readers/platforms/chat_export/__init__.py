"""Chat Export browser extension files: one chat per file, in four renderings of the same
message stream, each read into one Conversation by one builder (`builder`): `chat-export/1`
and `sharegpt/1` JSON (`json`), fenced Markdown (`markdown`), YAML (`yaml`)."""
