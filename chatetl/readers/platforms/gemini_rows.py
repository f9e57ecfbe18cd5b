"""What both variants of Gemini's Takeout activity (chatetl.readers.platforms.gemini: the JSON;
gemini_html: the HTML) make of one activity: a `Row`, as compact as a conversation needs it, built the
same way from either (`make_row`): the prompt or what the row is, its answers, files and conversations."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, NamedTuple
from urllib.parse import urlparse

from chatetl.readers.fields import text_or_none
from chatetl.readers.report import ReadReport

# The conversation a link names: the app's own chats, a Gem's chats, and Bard's older links.
_APP_LINK = re.compile(
    r"https?://(?:gemini\.google\.com/(?:u/\d+/)?(?:app|gem/[^/?#\s\"'<>]+)|bard\.google\.com/(?:u/\d+/)?chat)/([A-Za-z0-9_-]{6,})"
)
_GEM_LINK = re.compile(r"https?://gemini\.google\.com/(?:u/\d+/)?gems?/")
_GEM_USED = re.compile(r"^(?P<gem>.+?) was used in this chat\b")

# Title prefixes of a prompt (English and a few translations met in public exports), longest first.
_PROMPT = re.compile(
    r"^(?:Prompted|Live Prompt|Asked:?|Submitted query|Query submitted|Branched|Added chat from link:|Prompt\s*:|Pokyn"
    r"|Υποβλήθηκε το ερώτημα)(?:[ \t\u00a0]+|$)"
)
CANVAS_TITLED = "Created Gemini Canvas titled"
# Rows that are no prompt, by their English titles: (prefix, what the activity is).
_ACTIVITIES = (
    (CANVAS_TITLED, "canvas"),
    ("Gave feedback", "feedback"),
    ("Cleared previous feedback", "feedback-cleared"),
    ("Selected preferred draft", "preferred-draft"),
    ("Used an Assistant feature", "assistant-feature"),
    ("Used Gemini Apps", "used"),
    ("Answered survey question", "survey"),
    ("Created", "created"),
    ("Used", "used"),
    ("Shared", "shared"),
    ("Deleted", "deleted"),
)
_GENERATED = re.compile(r"^\d+ generated images?\.?$")  # a subtitle of a row whose answer made images
IMAGE_EXTENSIONS = frozenset({"png", "jpg", "jpeg", "gif", "webp", "heic", "heif", "bmp", "svg", "avif"})


class Row(NamedTuple):
    """One activity, as compact as a conversation needs it (held until the file's end)."""

    place: int  # place in the file (0: the first, the newest)
    where: str  # the place in the file, for errors
    time: float | None  # epoch seconds (the JSON's with milliseconds, the HTML's to the second)
    second: str  # the time to the second, as both variants carry it (or the HTML's own words)
    activity: str | None  # None for a prompt, else what the row is (feedback, canvas ...)
    text: str  # the prompt, or the activity's title
    answers: list[str]  # the text of each answer (regenerations in order)
    answer_images: list[list[list[str]]]  # [src, alt] of each answer's images
    files: list[list[Any]]  # [pointer, shown name] of the prompt's attachments
    conversations: list[str]  # the app ids it belongs to
    model: str | None
    extra: dict[str, Any]  # kept fields (subtitles, details ...), unknown ones

SPACES = re.compile(r"[\s\u00a0\u202f]+")


def is_gemini(header: Any, products: list[str]) -> bool:
    """Whether a row is Gemini's (or Bard's): by its header or products; a row that names neither
    is taken as the file's own (the file was detected as Gemini's)."""
    names = [n for n in [header, *products] if isinstance(n, str) and n]
    return not names or any("Gemini" in n or "Bard" in n for n in names)


def make_row(
    index: int, where: str, time: float | None, second: str, title: str, answers: list[str], images: list[list[list[str]]],
    files: list[list[Any]], links: list[str], subtitles: list[dict[str, Any]], extra: dict[str, Any], report: ReadReport,
    uploads: frozenset[str] = frozenset(),
) -> Row:
    """The parts both variants read, made one row the same way."""
    prompt = _PROMPT.match(title)
    activity = None
    if prompt:
        text = title[prompt.end():].strip()
    else:
        text = title.strip()
        activity = next((kind for prefix, kind in _ACTIVITIES if text.startswith(prefix)), None)
        if activity is None:
            # A title of no known kind (another language's prompt?): a turn when it was answered.
            report.unknown(f"gemini.title:{text.split(' ', 1)[0][:40]}")
            activity = None if answers else "other"
    model = gem = None
    for s in subtitles:
        name = text_or_none(s.get("name"))
        if name and name.startswith("Model:"):
            model = name[len("Model:"):].strip() or None
        url = s.get("url")
        if name and isinstance(url, str) and _GEM_LINK.match(url):
            used = _GEM_USED.match(name)
            gem = used.group("gem") if used else name
    if gem:
        extra["gem"] = gem
    conversations: list[str] = []
    for link in links:
        for app_id in _APP_LINK.findall(link):
            if app_id not in conversations:
                conversations.append(app_id)
    seen: dict[str, list[Any]] = {}
    for pointer, shown in files:
        if pointer in seen:
            seen[pointer][1] = shown or seen[pointer][1]
        else:
            seen[pointer] = [pointer, shown]
    _generated_to_answer(seen, images, subtitles, uploads)
    return Row(index, where, time, second, activity, text, answers, images, list(seen.values()), conversations, model, extra)


def _generated_to_answer(files: dict[str, list[Any]], images: list[list[list[str]]], subtitles: list[dict[str, Any]], uploads: frozenset[str]) -> None:
    """A row lists the images its answer generated among its files: a file the answer shows (an
    `<img>` of the same name) is the answer's alone, and when a subtitle says "N generated
    image(s)." the row's other image files are too (added to the last answer), but for the
    person's own (`imageFile`, or a file a subtitle names as attached)."""
    if not images or not files:
        return
    shown = {file_name(src) for answer in images for src, _ in answer if src}
    generated = any(_GENERATED.match(text_or_none(s.get("name")) or "") for s in subtitles)
    for pointer in list(files):
        name = file_name(pointer)
        if name in shown:
            del files[pointer]
        elif generated and name.rsplit(".", 1)[-1].lower() in IMAGE_EXTENSIONS and not files[pointer][1] and pointer not in uploads:
            del files[pointer]
            images[-1].append([pointer, ""])


def file_name(pointer: str) -> str:
    return pointer.split("?", 1)[0].rsplit("/", 1)[-1]


def to_second(when: datetime) -> str:
    return when.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def is_local_file(url: str) -> bool:
    """A file beside the activity file (an attachment), not a web address."""
    try:
        parsed = urlparse(url)
    except ValueError:
        return False
    return not parsed.scheme and not parsed.netloc and not url.startswith(("/", "#"))


def shown_file_name(name: Any) -> str | None:
    """"-  image_89b1bd.png" (a subtitle naming an attached file) as "image_89b1bd.png"."""
    return text_or_none(name.strip().lstrip("-").strip()) if isinstance(name, str) else None



def short(exc: BaseException, limit: int = 200) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."
