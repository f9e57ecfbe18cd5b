"""Gemini Takeout activity (MyActivity.json / MyActivity.html): rows grouped into conversations.

Every fixture is generated here: activity rows as Takeout writes them (newest first), and the same
rows rendered the way Takeout's HTML renders them (`takeout_html`), so the two variants can be held
to giving the same conversations.
"""

from __future__ import annotations

import html
import io
import json
import zipfile
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow.parquet as pq
import pytest

from chatetl.ingest.checks import check_normalized_pair
from chatetl.model import MessageKind, Role, Source
from chatetl.readers import Entry, ReadReport, read_entry
from chatetl.readers.htmltext import html_to_text
from chatetl.readers.inputs.detect import Format, detect
from chatetl.readers.jsonscan.records import Shape
from chatetl.readers.platforms import gemini, gemini_html
from chatetl.samples.gemini import sample
from chatetl.tables import TableWriter, iter_conversations

T0 = datetime(2026, 7, 20, 15, 0, 0, tzinfo=UTC)
APP_A = "7b0000000000aaaa"
APP_B = "1c0000000000bbbb"
FOLDER = "Takeout/My Activity/Gemini Apps"


def iso_ms(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def row(title: str, minutes: float, *answers: str, app: str | None = None, title_url: str | None = None, **extra: Any) -> dict:
    """One My Activity row; `app` puts the conversation link in `details` (where real exports have it)."""
    r: dict[str, Any] = {"header": "Gemini Apps", "title": title, "time": iso_ms(minutes), "products": ["Gemini Apps"],
                         "activityControls": ["Gemini Apps Activity"]}
    if title_url:
        r["titleUrl"] = title_url
    if answers:
        r["safeHtmlItem"] = [{"html": a} for a in answers]
    if app:
        r["details"] = [{"name": "Conversation", "url": f"https://gemini.google.com/app/{app}"}]
    r.update(extra)
    return r


def read_bytes(name: str, data: bytes) -> tuple[list, ReadReport]:
    report = ReadReport()
    return list(read_entry(Entry.from_bytes(name, data), report)), report


def read_rows(rows: list, name: str = "MyActivity.json") -> tuple[list, ReadReport]:
    return read_bytes(name, json.dumps(rows, ensure_ascii=False).encode())


def turns(conv) -> list[tuple[str, str]]:
    return [(m.role.value, m.text) for m in conv.visible_turns]


def takeout_zip(files: dict[str, bytes | str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


# --- the HTML, rendered from the rows as Takeout renders them -----------------------------------

PDT = timedelta(hours=-7)
WHY = ('<b>Why is this here?</b><br>&emsp;This activity was saved to your Google Account because the following settings were on:'
       '&nbsp;Gemini Apps Activity.&nbsp;You can control these settings &nbsp;<a href="https://myaccount.google.com/activitycontrols">here</a>.')
STYLE = "<style type=\"text/css\">" + ".mdl-card{display:flex}" * 40 + "</style>"


def takeout_time(value: str, offset: timedelta = PDT, zone: str = "PDT") -> str:
    local = datetime.fromisoformat(value) + offset
    hour = local.hour % 12 or 12
    return f"{local:%b} {local.day}, {local.year}, {hour}:{local:%M:%S}\u202f{'AM' if local.hour < 12 else 'PM'} {zone}"


def takeout_cell(r: dict, when: str | None = None) -> str:
    esc = html.escape
    title, link = r["title"], r.get("titleUrl")
    verb, _, rest = title.partition(" ")
    if verb == "Prompted":
        shown = "Prompted&nbsp;" + (f'<a href="{esc(link)}">{esc(rest)}</a>' if link else esc(rest))
    else:
        shown = f'<a href="{esc(link)}">{esc(title)}</a>' if link else esc(title)
    lines = [shown]
    for s in r.get("subtitles", []):
        lines.append(f'<a href="{esc(s["url"])}">{esc(s["name"])}</a>' if s.get("url") else esc(s["name"]))
    lines.append(when or takeout_time(r["time"]))
    answer = "".join(item["html"] for item in r.get("safeHtmlItem", []))
    body = "<br>".join(lines) + "<br>" + (answer + "\n<br>" if answer else "")
    files = [f if isinstance(f, str) else f["name"] for f in r.get("attachedFiles", [])] + ([r["imageFile"]] if r.get("imageFile") else [])
    right = "".join(f'<img src="{esc(f)}">' if f.endswith(".png") else f'<a href="{esc(f)}">{esc(f)}</a>' for f in files)
    details = "".join(f'&emsp;<a href="{esc(d["url"])}">{esc(d["name"])}</a><br>' for d in r.get("details", []))
    header = r["header"]
    return (
        '<div class="outer-cell mdl-cell mdl-cell--12-col mdl-shadow--2dp"><div class="mdl-grid">'
        f'<div class="header-cell mdl-cell mdl-cell--12-col"><p class="mdl-typography--title">{esc(header)}<br></p></div>'
        f'<div class="content-cell mdl-cell mdl-cell--6-col mdl-typography--body-1">{body}</div>'
        f'<div class="content-cell mdl-cell mdl-cell--6-col mdl-typography--body-1 mdl-typography--text-right">{right}</div>'
        f'<div class="content-cell mdl-cell mdl-cell--12-col mdl-typography--caption"><b>Products:</b><br>&emsp;{esc(header)}<br>'
        + (f"<b>Details:</b><br>{details}" if details else "") + WHY + "</div></div></div>"
    )


def takeout_html(rows: list[dict], style: str = STYLE) -> bytes:
    cells = "".join(takeout_cell(r) for r in rows)
    return (f'<html><head><meta charset="UTF-8"><title>My Activity</title>{style}</head><body>'
            f'<div class="mdl-grid">{cells}</div></body></html>').encode()


# --- conversations, turns, order ----------------------------------------------------------------

def test_prompts_become_turns_grouped_by_the_app_link_in_time_order():
    rows = [  # newest first, two conversations interleaved
        row("Prompted And for the sauce?", 20, "<p>A <em>lemon</em> sauce.</p>", app=APP_A),
        row("Prompted Which gears for a hill?", 15, "<p>Low ones.</p>", app=APP_B),
        row("Prompted A tart recipe, please", 10, "<h3>Tart</h3><ol><li>Flour</li><li>Butter</li></ol>", app=APP_A),
        row("Prompted How do I set up a bike?", 5, "<p>Start with the saddle.</p>", app=APP_B),
    ]
    convs, report = read_rows(rows)
    assert report.errors == [] and report.drift == {}
    assert report.formats == {"gemini": 1} and report.conversations == 2 and report.messages == 8
    a, b = convs  # the order of their newest activity
    assert (a.conversation_id, b.conversation_id) == (APP_A, APP_B)
    assert a.source is Source.GEMINI and a.platform == "gemini" and a.key == f"gemini:{APP_A}"
    assert a.url == f"https://gemini.google.com/app/{APP_A}"
    assert turns(a) == [("user", "A tart recipe, please"), ("assistant", "### Tart\n\n1. Flour\n2. Butter"),
                        ("user", "And for the sauce?"), ("assistant", "A *lemon* sauce.")]
    assert turns(b) == [("user", "How do I set up a bike?"), ("assistant", "Start with the saddle."),
                        ("user", "Which gears for a hill?"), ("assistant", "Low ones.")]
    assert a.title == "A tart recipe, please" and a.meta["title_from"] == "first prompt"
    assert a.created_at == T0 + timedelta(minutes=10) and a.updated_at == T0 + timedelta(minutes=20)
    prompt, answer, prompt2, answer2 = a.messages
    assert (prompt.parent_id, answer.parent_id, prompt2.parent_id, answer2.parent_id) == (
        None, prompt.message_id, answer.message_id, prompt2.message_id)
    assert a.current_node == answer2.message_id
    assert [m.seq for m in a.messages] == [0, 1, 2, 3] and all(m.on_active_branch for m in a.messages)
    assert prompt.created_at == T0 + timedelta(minutes=10) and prompt.content_type == "prompt" and answer.content_type == "html"
    assert len({m.message_id for m in a.messages}) == 4


def test_regenerated_answers_are_siblings_and_the_last_is_active():
    rows = [
        row("Prompted Thanks, and shorter?", 9, "<p>Sure.</p>", app=APP_A),
        row("Selected preferred draft", 8, app=APP_A),
        row("Prompted Write a haiku about rain", 5, "<p>first draft</p>", "<p>second draft</p>", "<p>third draft</p>", app=APP_A),
    ]
    (conv,), report = read_rows(rows)
    assert report.errors == []
    prompt = conv.messages[0]
    drafts = [m for m in conv.messages if m.parent_id == prompt.message_id]
    assert [d.text for d in drafts] == ["first draft", "second draft", "third draft"]
    assert [d.extra for d in drafts] == [{"draft": i, "drafts": 3} for i in (1, 2, 3)]
    assert [d.on_active_branch for d in drafts] == [False, False, True]
    follow_up = conv.messages[-2]
    assert follow_up.text == "Thanks, and shorter?" and follow_up.parent_id == drafts[-1].message_id
    assert turns(conv) == [("user", "Write a haiku about rain"), ("assistant", "third draft"),
                           ("user", "Thanks, and shorter?"), ("assistant", "Sure.")]
    assert conv.meta["activities"] == [{"time": "2026-07-20T15:08:00Z", "kind": "preferred-draft", "title": "Selected preferred draft",
                                        "extra": {"details": rows[1]["details"]}}]


def test_rows_that_name_no_conversation_are_each_their_own_with_a_stable_id():
    rows = [
        row("Prompted Second question of the morning", 10, "<p>Two.</p>"),
        row("Prompted First question of the morning", 0, "<p>One.</p>"),
    ]
    convs, report = read_rows(rows)
    assert report.errors == [] and len(convs) == 2  # ten minutes apart: never merged by time
    assert [turns(c) for c in convs] == [[("user", "Second question of the morning"), ("assistant", "Two.")],
                                         [("user", "First question of the morning"), ("assistant", "One.")]]
    assert all(c.conversation_id.startswith("activity-") and c.url is None and c.meta["id_from"] == "time and prompt" for c in convs)
    # the id comes from the row's time and prompt alone: the same in another export with other rows around it
    again, _ = read_rows([row("Prompted Something else", 30, "<p>x</p>"), rows[1]])
    assert again[1].conversation_id == convs[1].conversation_id
    moved, _ = read_rows([row("Prompted First question of the morning", 1, "<p>One.</p>")])
    assert moved[0].conversation_id != convs[1].conversation_id


def test_a_row_in_several_branches_belongs_to_each():
    both = row("Prompted Shared start", 0, "<p>The start.</p>")
    both["details"] = [{"name": "Conversation", "url": f"https://gemini.google.com/app/{APP_A}"},
                       {"name": "Conversation", "url": f"https://gemini.google.com/app/{APP_B}"}]
    rows = [row("Prompted Branch B goes on", 6, "<p>B.</p>", app=APP_B), row("Prompted Branch A goes on", 5, "<p>A.</p>", app=APP_A), both]
    convs, report = read_rows(rows)
    assert report.errors == []
    by_id = {c.conversation_id: c for c in convs}
    assert turns(by_id[APP_A]) == [("user", "Shared start"), ("assistant", "The start."), ("user", "Branch A goes on"), ("assistant", "A.")]
    assert turns(by_id[APP_B]) == [("user", "Shared start"), ("assistant", "The start."), ("user", "Branch B goes on"), ("assistant", "B.")]


def test_conversation_links_in_their_forms_and_links_that_are_content():
    rows = [
        row("Prompted via titleUrl", 4, "<p>a</p>", title_url=f"https://gemini.google.com/app/{APP_A}?hl=en"),
        row("Prompted via an account slot", 3, "<p>b</p>", title_url=f"https://gemini.google.com/u/1/app/{APP_A}"),
        row("Prompted in a Gem's chat", 2, "<p>c</p>", title_url=f"https://gemini.google.com/gem/poet-123/{APP_B}"),
        row("Prompted an old Bard chat", 1, "<p>d</p>", title_url="https://bard.google.com/chat/c0ffee00aa11"),
        # a link the user pasted (a subtitle) and one the model wrote are content: no conversation
        row("Prompted look at https://gemini.google.com/app/0000000000000000", 0,
            '<p>See <a href="https://gemini.google.com/app/1111111111111111">this chat</a>.</p>',
            subtitles=[{"name": "https://gemini.google.com/app/0000000000000000", "url": "https://gemini.google.com/app/0000000000000000"}],
            title_url="https://gemini.google.com/app"),
    ]
    convs, report = read_rows(rows)
    assert report.errors == []
    ids = [c.conversation_id for c in convs]
    assert ids[:3] == [APP_A, APP_B, "c0ffee00aa11"] and ids[3].startswith("activity-")
    assert [m.text for m in convs[0].visible_turns] == ["via an account slot", "b", "via titleUrl", "a"]
    assert convs[3].visible_turns[1].text == "See this chat (https://gemini.google.com/app/1111111111111111)."


# --- activities that are no turns, other products ---------------------------------------------

def test_other_activities_are_kept_as_metadata_or_counted_when_they_name_no_conversation():
    rows = [
        row("Created Gemini Canvas titled Trip plan", 9, "<h2>Day 1</h2><p>Walk.</p>", app=APP_A),
        row("Gave feedback: Good response", 8, app=APP_A),
        row("Prompted Plan a trip", 5, "<p>Here is a plan.</p>", app=APP_A),
        row("Cleared previous feedback", 4),
        row("Used an Assistant feature", 3),
        row("Gave feedback: Bad response", 2),
    ]
    (conv,), report = read_rows(rows)
    assert report.errors == [] and report.drift == {}
    assert turns(conv) == [("user", "Plan a trip"), ("assistant", "Here is a plan.")]
    assert [(a["kind"], a["title"], a.get("text")) for a in conv.meta["activities"]] == [
        ("feedback", "Gave feedback: Good response", None),
        ("canvas", "Created Gemini Canvas titled Trip plan", "## Day 1\n\nWalk."),
    ]
    assert report.skipped == {"gemini activity outside a conversation (feedback-cleared)": 1,
                              "gemini activity outside a conversation (assistant-feature)": 1,
                              "gemini activity outside a conversation (feedback)": 1}


def test_a_takeout_zip_reads_the_gemini_activity_and_skips_other_products_without_errors():
    search = [{"header": "Search", "title": "Searched for gemini tart recipe", "titleUrl": "https://www.google.com/search?q=gemini",
               "time": iso_ms(1), "products": ["Search"], "activityControls": ["Web & App Activity"]}]
    youtube = takeout_html([{"header": "YouTube", "title": "Watched A tart video", "time": iso_ms(2)}])
    mixed = [row("Prompted A tart recipe", 3, "<p>Flour.</p>", app=APP_A),
             {"header": "Maps", "title": "Searched for bakery", "time": iso_ms(2), "products": ["Maps"]}]
    data = takeout_zip({
        "Takeout/archive_browser.html": "<html><body><h1>Archive</h1></body></html>",
        "Takeout/My Activity/Search/MyActivity.json": json.dumps(search),
        "Takeout/My Activity/YouTube/MyActivity.html": youtube,
        f"{FOLDER}/MyActivity.json": json.dumps(mixed),
    })
    convs, report = read_bytes("takeout-20260720T000000Z-001.zip", data)
    assert report.errors == []
    assert [c.conversation_id for c in convs] == [APP_A] and turns(convs[0]) == [("user", "A tart recipe"), ("assistant", "Flour.")]
    assert convs[0].source_file == f"takeout-20260720T000000Z-001.zip!{FOLDER}/MyActivity.json"
    assert report.skipped == {"not a chat file": 3, "other product's activity": 1}
    assert report.formats == {"gemini": 1}


# --- attachments, subtitles, fields -------------------------------------------------------------

def test_attached_files_images_and_answer_images_become_attachments():
    r = row("Prompted What is in these?", 0, '<p>A cat.</p><p><img src="generated_cat-9f.png" alt="a drawn cat"></p>', app=APP_A,
            attachedFiles=["notes.pdf", {"name": "budget.csv"}], imageFile="image_89b1bd-1e9873211d1a6157.png",
            subtitles=[{"name": "Attached 3 files."}, {"name": "-  image_89b1bd.png", "url": "image_89b1bd-1e9873211d1a6157.png"},
                       {"name": "Model: 2.5 Pro"}])
    (conv,), report = read_rows([r])
    assert report.errors == [] and report.drift == {}
    prompt, answer = conv.messages
    assert [(a.kind, a.name, a.pointer, a.mime_type) for a in prompt.attachments] == [
        ("file", "notes.pdf", "notes.pdf", "application/pdf"),
        ("file", "budget.csv", "budget.csv", "text/csv"),
        ("image", "image_89b1bd.png", "image_89b1bd-1e9873211d1a6157.png", "image/png"),  # its subtitle names it
    ]
    assert [(a.kind, a.name, a.pointer) for a in answer.attachments] == [("image", "a drawn cat", "generated_cat-9f.png")]
    assert answer.text == "A cat.\n\n![a drawn cat](generated_cat-9f.png)"
    assert prompt.extra["subtitles"] == r["subtitles"] and prompt.extra["details"] == r["details"]
    assert answer.model == "2.5 Pro" and conv.model == "2.5 Pro"


def test_a_gem_is_kept_on_the_prompt_and_the_conversation():
    gem = [{"name": "Poet was used in this chat. Manage your Gems.", "url": "https://gemini.google.com/gems/view"}]
    (conv,), report = read_rows([row("Prompted A verse", 0, "<p>Rain.</p>", app=APP_A, subtitles=gem)])
    assert report.errors == [] and conv.messages[0].extra["gem"] == "Poet" and conv.meta["gems"] == ["Poet"]


def test_unknown_fields_and_titles_are_drift_kept_on_the_prompt():
    rows = [
        row("Prompted Hello", 2, "<p>Hi.</p>", app=APP_A, newThing={"a": 1}),
        row("送信したメッセージ: こんにちは", 1, "<p>こんにちは。</p>", app=APP_A),  # a prefix no table knows: answered, so a turn
        row("Renamed the chat", 0, app=APP_A),  # not answered: an activity
    ]
    rows[0]["safeHtmlItem"][0]["lang"] = "en"
    (conv,), report = read_rows(rows)
    assert report.errors == []
    assert report.drift == {"gemini.activity_field:newThing": 1, "gemini.safe_html_field:lang": 1,
                            "gemini.title:送信したメッセージ:": 1, "gemini.title:Renamed": 1}
    assert turns(conv) == [("user", "送信したメッセージ: こんにちは"), ("assistant", "こんにちは。"), ("user", "Hello"), ("assistant", "Hi.")]
    hello = conv.messages[2]
    assert hello.extra["newThing"] == {"a": 1} and hello.extra["answer_fields"] == {"lang": "en"}
    assert conv.meta["activities"][0]["kind"] == "other"


def test_a_prompt_without_an_answer_and_an_empty_answer():
    rows = [row("Prompted Draw a cat", 1, "<p></p>", app=APP_A), row("Prompted Are you there?", 0, app=APP_A)]
    (conv,), _ = read_rows(rows)
    assert [(m.role, m.kind) for m in conv.messages] == [(Role.USER, MessageKind.TURN), (Role.USER, MessageKind.TURN),
                                                          (Role.ASSISTANT, MessageKind.HIDDEN)]
    assert conv.messages[1].parent_id == conv.messages[0].message_id and conv.messages[2].extra == {"empty": True}


# --- damage -------------------------------------------------------------------------------------

def test_damaged_rows_are_reported_with_their_place_and_the_rest_read():
    rows = [
        row("Prompted Fine one", 5, "<p>ok</p>", app=APP_A),
        ["not", "an", "object"],
        {"header": "Gemini Apps", "title": "Prompted no time", "products": ["Gemini Apps"]},
        {"header": "Gemini Apps", "title": 42, "time": iso_ms(3), "products": ["Gemini Apps"]},
        row("Prompted bad answers", 2, app=APP_A, safeHtmlItem="<p>not a list</p>"),
        row("Prompted Fine two", 1, "<p>ok too</p>", app=APP_A),
    ]
    (conv,), report = read_rows(rows)
    assert [(e.where, e.reason) for e in report.errors] == [
        ("record 1", "ValueError: expected an activity object, got list"),
        ("record 2", "ValueError: activity time missing or unreadable (None)"),
        ("record 3", "TypeError: activity has no title"),
        ("record 4", "ValueError: `safeHtmlItem` is str, not a list of answers"),
    ]
    assert all(e.raw for e in report.errors) and json.loads(report.errors[0].raw) == ["not", "an", "object"]
    assert [m.text for m in conv.visible_turns] == ["Fine two", "ok too", "Fine one", "ok"]


def test_a_truncated_file_keeps_the_rows_before_the_cut():
    body = json.dumps([row("Prompted kept", 1, "<p>yes</p>", app=APP_A), row("Prompted cut", 0, "<p>no</p>", app=APP_A)])
    convs, report = read_bytes("MyActivity.json", body[: body.index("Prompted cut") + 5].encode())
    assert [turns(c) for c in convs] == [[("user", "kept"), ("assistant", "yes")]]
    assert len(report.errors) == 1 and "invalid or truncated JSON" in report.errors[0].reason


# --- detection ----------------------------------------------------------------------------------

def detected(data: bytes, name: str = "x") -> tuple:
    return detect(Entry.from_bytes(name, data))


def test_detection_takes_gemini_activity_and_leaves_other_activity_alone():
    assert detected(json.dumps([row("Prompted hi", 0, "<p>x</p>")]).encode()) == (Format.GEMINI, Shape.ARRAY)
    bard = {"header": "Bard", "title": "Asked hi", "time": iso_ms(0), "products": ["Bard"]}
    assert detected(json.dumps([bard], indent=2).encode()) == (Format.GEMINI, Shape.ARRAY)
    korean = {"header": "Gemini 앱", "title": "Prompted hi", "time": iso_ms(0), "products": ["Gemini 앱"]}
    assert detected(json.dumps([korean]).encode())[0] is Format.GEMINI
    assert detected(takeout_html([row("Prompted hi", 0, "<p>x</p>")])) == (Format.GEMINI_HTML, Shape.TEXT)
    # a page whose style block is longer than the detection head
    assert detected(takeout_html([row("Prompted hi", 0)], style="<style>" + "a{b:c}" * 20000 + "</style>"))[0] is Format.GEMINI_HTML


def test_detection_refuses_look_alikes():
    search = {"header": "Search", "title": "Searched for gemini", "time": iso_ms(0), "products": ["Search"]}
    assert detected(json.dumps([search]).encode())[0] is None
    assert detected(json.dumps([{"header": "Gemini", "title": "a note", "time": iso_ms(0)}]).encode())[0] is None  # no activity field
    assert detected(json.dumps([{"header": "Gemini Apps", "title": "x"}]).encode())[0] is None  # no time
    assert detected(takeout_html([{"header": "YouTube", "title": "Watched Gemini launch", "time": iso_ms(0)}]))[0] is None
    assert detected(b"<html><body><p>Exported from Gemini Apps</p><div class='mdl-grid'></div></body></html>")[0] is None
    # and the other formats are never Gemini's
    claude = [{"uuid": "u", "name": "t", "chat_messages": [], "created_at": iso_ms(0), "updated_at": iso_ms(0)}]
    assert detected(json.dumps(claude).encode())[0] is Format.CLAUDE_AI
    chatgpt = [{"title": "t", "create_time": 1.0, "mapping": {"r": {"id": "r", "message": None, "parent": None, "children": []}}}]
    assert detected(json.dumps(chatgpt).encode())[0] is Format.CHATGPT


# --- the HTML variant ---------------------------------------------------------------------------

def activity_for_both() -> list[dict]:
    """Rows both variants carry alike: one answer each (the HTML joins regenerated ones)."""
    return [
        row("Prompted And for the sauce? <lemon> & 'zest'", 20.5, "<p>A <em>lemon</em> sauce.</p>\n<pre><code>zest = 1\n</code></pre>",
            app=APP_A),
        row("Selected preferred draft", 19, app=APP_A),
        row("Prompted Which gears\nfor a hill?", 15.25, "<ul><li>Low</li><li>Lower</li></ul>", app=APP_B,
            subtitles=[{"name": "Poet was used in this chat. Manage your Gems.", "url": "https://gemini.google.com/gems/view"}]),
        row("Prompted What is in this photo?", 12, '<p>A tart.</p><img src="tart_drawn-1a.png" alt="tart">', app=APP_A,
            attachedFiles=["recipe.pdf"], imageFile="image_12ab-99.png",
            subtitles=[{"name": "Attached 2 files."}, {"name": "-  image_12ab.png", "url": "image_12ab-99.png"}]),
        row("Gave feedback: Good response", 11),
        row("Prompted A question on its own", 10.75, "<table><tr><th>a</th></tr><tr><td>1</td></tr></table>"),
        row("Prompted A tart recipe", 10, "<h3>Tart</h3><p>Flour &amp; butter.</p>", title_url=f"https://gemini.google.com/app/{APP_A}",
            app=APP_A),
        row("Prompted No answer kept", 9, app=APP_B),
    ]


def comparable(conv) -> dict:
    """A conversation as both variants must give it: times to the second (the HTML has no milliseconds)."""
    def cut(value):
        if isinstance(value, datetime):
            return value.replace(microsecond=0)
        if isinstance(value, dict):
            return {k: cut(v) for k, v in value.items()}
        if isinstance(value, list):
            return [cut(v) for v in value]
        return value
    return cut(conv.model_dump(exclude={"source_file"}))


def test_the_html_gives_the_same_conversations_as_the_json():
    rows = activity_for_both()
    from_json, json_report = read_rows(rows)
    from_html, html_report = read_bytes("MyActivity.html", takeout_html(rows))
    assert json_report.errors == [] and html_report.errors == [] and html_report.drift == {}
    assert html_report.formats == {"gemini-html": 1}
    assert [comparable(c) for c in from_html] == [comparable(c) for c in from_json]
    assert [c.conversation_id for c in from_html][:2] == [APP_A, APP_B] and len(from_html) == 3
    assert html_report.skipped == json_report.skipped == {"gemini activity outside a conversation (feedback)": 1}
    a = from_html[0]
    assert a.messages[-2].text == "And for the sauce? <lemon> & 'zest'"
    assert [(x.name, x.pointer) for x in a.messages[2].attachments] == [("recipe.pdf", "recipe.pdf"), ("image_12ab.png", "image_12ab-99.png")]
    assert a.messages[0].created_at == T0 + timedelta(minutes=10)  # 8:10:00 AM PDT
    # ... and from a Takeout zip, in its translated folder
    zipped, report = read_bytes("takeout.zip", takeout_zip({"Takeout/Mes activités/Applications Gemini/MonActivité.html": takeout_html(rows)}))
    assert report.errors == [] and [comparable(c) for c in zipped] == [comparable(c) for c in from_json]


def test_html_regenerated_answers_read_as_one_answer():
    rows = [row("Prompted A haiku", 0, "<p>first</p>", "<p>second</p>", app=APP_A)]
    (conv,), _ = read_bytes("MyActivity.html", takeout_html(rows))
    assert turns(conv) == [("user", "A haiku"), ("assistant", "first\n\nsecond")]


@pytest.mark.parametrize(("when", "expected"), [
    ("Jul 20, 2026, 8:20:00\u202fAM PDT", datetime(2026, 7, 20, 15, 20, tzinfo=UTC)),
    ("Jul 20, 2026, 8:20:00 PM GMT-03:00", datetime(2026, 7, 20, 23, 20, tzinfo=UTC)),
    ("20 Jul 2026, 16:20:00 BST", datetime(2026, 7, 20, 15, 20, tzinfo=UTC)),
    ("Sept 2, 2026, 12:05:26 AM UTC", datetime(2026, 9, 2, 0, 5, 26, tzinfo=UTC)),
    ("2026/07/21 00:20:00 JST", datetime(2026, 7, 20, 15, 20, tzinfo=UTC)),
    ("Jul 20, 2026, 9:20:00 PM UTC+05:30", datetime(2026, 7, 20, 15, 50, tzinfo=UTC)),
])
def test_html_times_in_their_written_forms(when, expected):
    cell = takeout_cell(row("Prompted hi", 0, "<p>x</p>", app=APP_A), when=when)
    (conv,), report = read_bytes("MyActivity.html", takeout_html([]).replace(b"</div></body>", cell.encode() + b"</div></body>"))
    assert report.errors == [] and conv.messages[0].created_at == expected


def test_an_html_time_in_another_locale_keeps_the_row_without_its_time():
    cell = takeout_cell(row("Prompted Question datée en français", 0, "<p>Réponse.</p>", app=APP_A), when="2. 9. 2026 9:00:00 SELČ")
    (conv,), report = read_bytes("MyActivity.html", takeout_html([]).replace(b"</div></body>", cell.encode() + b"</div></body>"))
    assert report.errors == [] and report.drift == {"gemini.html.time_format": 1}
    assert turns(conv) == [("user", "Question datée en français"), ("assistant", "Réponse.")]
    assert conv.messages[0].created_at is None and conv.messages[0].extra["time_text"] == "2. 9. 2026 9:00:00 SELČ"


def test_html_cells_are_cut_across_reads_and_a_bad_cell_is_reported(monkeypatch):
    monkeypatch.setattr(gemini_html, "READ_BYTES", 7)  # every cell start cut between two reads somewhere
    rows = [row(f"Prompted question {i}", 100 - i, f"<p>answer {i} {'word ' * 200}</p>", app=APP_A) for i in range(80)]
    cells = takeout_html(rows).split(b'<div class="outer-cell')
    cells[71] = cells[71].replace(b"question 70", b"question \xff70")  # not UTF-8 (past the detection head)
    (conv,), report = read_bytes("MyActivity.html", b'<div class="outer-cell'.join(cells))
    assert [(e.where.split(" (")[0], e.reason.split(":")[0]) for e in report.errors] == [("cell 70", "not UTF-8 text")]
    offset = int(report.errors[0].where.split("byte ")[1].rstrip(")"))
    assert b'<div class="outer-cell'.join(cells)[offset:].startswith(b'<div class="outer-cell')
    assert [m.text for m in conv.visible_turns if m.role is Role.USER] == [f"question {i}" for i in range(79, -1, -1) if i != 70]


def test_an_html_cell_past_its_cap_is_skipped_and_the_rest_read(monkeypatch):
    monkeypatch.setattr(gemini_html, "READ_BYTES", 4096)
    monkeypatch.setattr(gemini_html, "MAX_CELL_BYTES", 20_000)
    rows = [row("Prompted small", 2, "<p>ok</p>", app=APP_A), row("Prompted huge", 1, "<p>" + "x" * 50_000 + "</p>", app=APP_A),
            row("Prompted small again", 0, "<p>ok</p>", app=APP_A)]
    (conv,), report = read_bytes("MyActivity.html", takeout_html(rows))
    assert [e.reason for e in report.errors] == ["activity cell longer than 20000 bytes: skipped"]
    assert report.errors[0].where.startswith("cell 1 (byte ")
    assert [m.text for m in conv.visible_turns if m.role is Role.USER] == ["small again", "small"]


# --- bounded memory, tables, sample -------------------------------------------------------------

def test_rows_past_the_memory_budget_spill_to_disk_and_read_the_same(monkeypatch):
    rows = [row(f"Prompted q{i}", 100 - i, f"<p>{'word ' * 50}{i}</p>", app=APP_A if i % 2 else APP_B) for i in range(40)]
    rows += [row(f"Prompted alone {i}", 10 - i, "<p>x</p>") for i in range(5)]
    in_memory, _ = read_rows(rows)
    spilled = []
    real_add = gemini._RowStore.add

    def add(self, r, conversations):  # (held: a _Row in memory; past the budget: spilled to the store's database)
        real_add(self, r, conversations)
        spilled.append("_Spilled" if self.db is not None else "_Row")

    monkeypatch.setattr(gemini, "MAX_HELD_BYTES", 3000)
    monkeypatch.setattr(gemini._RowStore, "add", add)
    on_disk, report = read_rows(rows)
    assert report.errors == [] and "_Spilled" in spilled and "_Row" in spilled
    assert [c.model_dump() for c in on_disk] == [c.model_dump() for c in in_memory]


def test_normalized_tables_hold_the_conversations(tmp_path):
    name, data = sample()
    convs, _report = read_bytes(name, data)
    conv_path, msg_path = tmp_path / "c.parquet", tmp_path / "m.parquet"
    with TableWriter(conv_path, msg_path) as writer:
        for conv in convs:
            writer.add(conv, upload_key=name)
    assert all(r.passed for r in check_normalized_pair(conv_path, msg_path, "gemini").values())
    conv_rows = pq.read_table(conv_path).to_pylist()
    assert [(r["conversation_key"], r["source"], r["platform"], r["message_count"], r["total_messages"]) for r in conv_rows] == [
        ("gemini:5f1e2d3c4b5a6978", "gemini", "gemini", 6, 7),
        (conv_rows[1]["conversation_key"], "gemini", "gemini", 2, 2),
        ("gemini:a1b2c3d4e5f60718", "gemini", "gemini", 4, 4),
    ]
    assert conv_rows[1]["conversation_key"].startswith("gemini:activity-")
    msgs = [r for r in pq.read_table(msg_path).to_pylist() if r["conversation_id"] == "a1b2c3d4e5f60718"]
    assert [(r["role"], r["kind"], r["seq"]) for r in msgs] == [("user", "turn", 0), ("assistant", "turn", 1), ("user", "turn", 2),
                                                              ("assistant", "turn", 3)]
    assert msgs[0]["attachments"][0]["pointer"] == "image_4f2a9c-7d1e0b3a5c6f8e91.png"
    back = [c for c, _ in iter_conversations(conv_path, msg_path)]
    assert [c.model_dump() for c in back] == [c.model_dump() for c in convs]


def test_the_sample_reads_cleanly_with_a_branch():
    name, data = sample()
    assert name == "raw/samples/gemini-takeout.zip"
    convs, report = read_bytes(name, data)
    assert report.errors == [] and report.drift == {} and len(convs) == 3
    assert all(c.message_count >= 2 and [m.seq for m in c.visible_turns] == list(range(c.message_count)) for c in convs)
    assert any(len(c.messages) > len(c.visible_turns) for c in convs)  # the regenerated answer


# --- HTML to text -------------------------------------------------------------------------------

def test_answer_html_becomes_the_text_it_showed():
    rendered = html_to_text(
        '<p>Voici <strong>la réponse</strong>.</p><script>alert("x")</script><style>p{color:red}</style>'
        '<p><a href="javascript:alert(2)">click</a> and <a href="https://example.org/doc">the doc</a>.</p>'
        '<pre><code class="language-html">&lt;div class="x"&gt;hi&lt;/div&gt;\n  indented\n</code></pre>'
        "<ul><li><p>first</p></li><li>second<ul><li>nested</li></ul></li></ul>"
        "<blockquote><p>quoted</p><p>more</p></blockquote><hr>"
        "<table><tr><th>A</th><th>B</th></tr><tr><td>1</td><td>a | b</td></tr></table>"
        '<p>line<br>break &amp; <img src="https://x.org/i.png" alt="pic"></p>'
    )
    assert rendered.text == (
        "Voici **la réponse**.\n\nclick and the doc (https://example.org/doc).\n\n"
        '```html\n<div class="x">hi</div>\n  indented\n```\n\n'
        "- first\n- second\n  - nested\n\n> quoted\n>\n> more\n\n---\n\n"
        "| A | B |\n| --- | --- |\n| 1 | a \\| b |\n\nline\nbreak & ![pic](https://x.org/i.png)"
    )
    assert rendered.images == (("https://x.org/i.png", "pic"),)
    assert html_to_text("plain   text\nacross lines").text == "plain text across lines"


def test_broken_markup_never_raises_and_shows_its_text():
    assert html_to_text("<p>a < b and <!-- note --> c &gt; d<p>unclosed <strong>bold").text == "a < b and c > d\n\nunclosed **bold"
    assert html_to_text('<ol start="3"><li>three<li>four</ol><pre>x = 1</pre>').text == "3. three\n4. four\n\n```\nx = 1\n```"
    assert html_to_text("<div><table><tr><td>only</td></tr></table></div>").text == "| only |\n| --- |"


def test_whitespace_runs_collapse_as_one_regex_substitution_did():
    """The answers' whitespace collapses by str.replace (for speed): on generated text of spaces, tabs, line
    ends, form feeds, no-break spaces and other characters HTML does not collapse, runs of any length, the same
    text as substituting one space for each run of HTML's whitespace."""
    import random
    import re

    from chatetl.readers.htmltext import _collapse_spaces

    run = re.compile(r"[ \t\n\r\f]+")
    rng = random.Random(3)
    alphabet = [" ", " ", "\t", "\n", "\r", "\f", "\xa0", "\x0b", "\u2003", "a", "é", "<", ">", " " * 37, "\n \t" * 9]
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(20_000)]
    changed = 0
    for text in texts:
        collapsed = _collapse_spaces(text)
        assert collapsed == run.sub(" ", text), repr(text)
        changed += collapsed != text
    assert changed > 5_000  # (most of them had runs to collapse)


# --- issue 37: generated images, image-only prompts, images glued to a sentence ------------------

FOX = "fox_a1b2c3-0f9e8d7c6b5a4321.png"
PHOTO = "photo_9f8e7d-1a2b3c4d5e6f7a8b.jpg"


def test_a_generated_image_is_the_answers_alone_and_never_glued_to_its_sentence():
    drawn = row("Prompted Draw a fox", 2, f'<p>Here is a fox with sharp bone structure.<img src="{FOX}" alt=""></p>', app=APP_A,
                subtitles=[{"name": "1 generated image."}], attachedFiles=[FOX, "fox_b-2.png"])
    (conv,), report = read_rows([drawn])
    assert report.errors == []
    prompt, answer = conv.messages
    assert prompt.attachments == []
    assert [a.pointer for a in answer.attachments] == [FOX, "fox_b-2.png"]
    assert answer.text == f"Here is a fox with sharp bone structure.\n\n![]({FOX})"


def test_a_prompt_of_an_image_alone_is_titled_by_the_image():
    photo = row("Prompted ", 0, "<p>A photo of a forest.</p>", app=APP_B, attachedFiles=[PHOTO], imageFile=PHOTO,
                subtitles=[{"name": "Attached 1 file."}, {"name": "-  photo_9f8e7d.jpg", "url": PHOTO}])
    (conv,), _ = read_rows([photo])
    assert conv.title == "Image: photo_9f8e7d.jpg" and conv.meta["title_from"] == "first prompt's file"
    prompt = conv.messages[0]
    assert prompt.kind is MessageKind.TURN and [a.pointer for a in prompt.attachments] == [PHOTO]
    # beside a prompt with text, the text still titles it
    (conv,), _ = read_rows([row("Prompted Draw a fox", 2, "<p>Fox.</p>", app=APP_B), photo])
    assert conv.title == "Draw a fox"


def test_literal_link_and_image_text_in_an_answer_stay_text_in_markdown():
    from markdown_it import MarkdownIt

    answer = html_to_text(
        "<p>Log in at [your bank](https://bank.example.invalid/login) or &lt;img src=x&gt; and "
        "<code>a[0] &lt;b&gt;</code>; 1 &lt; 2.</p>"
        '<p><img src="https://x.org/i.png" alt="](https://evil.example.invalid) [click"></p>'
    ).text
    assert answer == (
        "Log in at \\[your bank\\](https://bank.example.invalid/login) or \\<img src=x> and `a[0] <b>`; 1 < 2.\n\n"
        "![\\](https://evil.example.invalid) \\[click](https://x.org/i.png)"
    )
    rendered = MarkdownIt("commonmark").render(answer)
    assert "<a " not in rendered and "<img" in rendered and rendered.count("<img") == 1
    assert 'src="https://x.org/i.png"' in rendered
