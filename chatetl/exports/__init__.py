"""Exported files: one writer per format, file names safe on every file system.

- `chat_export_json` (chat-export/1), `sharegpt` (sharegpt/1 and the ShareGPT JSONL training lines),
  `markdown` (the fenced md layout), `markdown_note` (front matter for note apps), `yaml_export`,
  `html` (with `templates/conversation.html.j2`): each renders an `ExportView` (`meta`);
- `formats`: the format names, extensions and renderers; `filenames`: safe, unique names;
- `files`: a conversation into its files, and the collector behind the training file and the zip;
- `bucket`: newest-wins publishing to the object store; `partition`: the exports stage of a partition;
- `archive` (with `templates/archive.html.j2`, `archive_filter.js.j2`): one page of the whole history,
  linking to the `html` files, with a filter and messages per month per platform.
"""
