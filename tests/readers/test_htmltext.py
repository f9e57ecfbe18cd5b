"""chatetl.readers.htmltext gives, for thousands of seeded fragments (tests/htmltext_cases.py: answers
shaped as Gemini renders them, mangled ones and hostile ones), the text and images the converter gave
before its tokenizer's fast path and its tag table (recorded in tests/readers/golden/htmltext.jsonl.xz
by the implementation of ed0b4a3); and the fast tokenizer cuts each fragment it takes as the exact
scan does."""

from __future__ import annotations

from htmltext_cases import COUNT, cases, outputs, stored

from chatetl.readers.htmltext import _PLAIN_TAG, _inline_marks, _TextWriter, html_to_text


def test_html_to_text_gives_the_recorded_outputs():
    assert outputs(html_to_text) == stored()


def _written(markup: str, exact: bool) -> tuple[list[str], list[tuple[str, str]]]:
    writer = _TextWriter()
    (writer._feed_exact if exact else writer.feed)(markup)
    return writer.parts, writer.images


def test_the_fast_tokenizer_writes_what_the_exact_scan_writes():
    taken = 0
    for html in cases(COUNT, seed=380):
        markup = _inline_marks(html)
        taken += len(_PLAIN_TAG.split(markup)) // 4 == markup.count("<")
        assert _written(markup, exact=False) == _written(markup, exact=True), html
    assert taken > COUNT // 4  # (a fragment with a "<" that opens no tag that ends takes the exact scan)
