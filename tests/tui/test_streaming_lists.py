"""Lists and quotes grow in place as an answer streams (issue 9, item 3: display lag).

Textual's ``Markdown.append`` removes the document's last block and mounts it again when it is
a list or a quote: every item, bullet and paragraph, on every update while an item streams.
:class:`~lovia.tui.widgets.streaming_markdown.GrowsInPlace` keeps the widgets shown and changes
what differs. These tests hold its promises with real widgets in a real Textual app: the streamed
list paints as Textual paints the same text loaded whole, in pieces of one, three and seventeen
characters, and an update inside the last item mounts nothing. Textual's own ``append`` never
parses again before the last top-level block, so "1. a\n\n2. b" streamed a character at a time
was two lists: a block that may join the list before it is parsed from that list
(``StreamingMarkdown._list_joined_by``).
"""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Markdown

from lovia.tui.widgets.streaming_markdown import StreamingMarkdown
from tests.tui.test_streaming_speed import painted

LISTS = {
    "nested bullets and numbers":
        "- first point\n- second with `code`\n  1. nested\n  2. and **more**\n- third\n\nAfter.\n",
    "a numbered list past nine": "".join(f"{n}. item number {n} of twelve\n" for n in range(1, 13)) + "\nEnd.\n",
    "numbers from seven": "7. seven\n8. eight\n9. nine\n10. ten\n",
    "loose items": "- one\n\n- two, after a blank line\n\n  with a second paragraph\n- three\n",
    "code inside an item": "- run this:\n\n  ```python\n  print('hi')\n  x = 1\n  ```\n- then that\n",
    "a quote holding a list": "> quoted\n>\n> - a\n> - b with *em*\n\nOut.\n",
    "an item that turns into a heading": "- a\n- b\n-\n\npara\n",
    "a list then a paragraph then a list": "- a\n- b\n\nmiddle text\n\n* c\n* d\n",
    "a heading inside an item": "- # big\n- small\n",
    # Loose lists, as models write steps: an item after a blank line was parsed alone first, and
    # Textual's append never parses before the last block again (two lists, a blank row between).
    "a loose numbered list": "Steps:\n\n1. First\n\n2. Second\n\n3. Third\n\nDone.\n",
    "loose items with paragraphs": "1. **Install**\n\n   Run the command.\n\n2. **Open**\n\n   Press enter.\n\nEnd.\n",
    "loose bullets": "Points:\n\n- one\n\n- two\n\n+ other kind\n\nEnd.\n",
    "a list then a number that starts no item": "- a\n\n2024 was a year.\n\n3.5 is a number.\n",
    "a list then an indented line too short": "1. a\n\n b, not inside\n",
    # A line after a table is one of its rows until it starts another block: the table loses a row.
    "a numbered item right after a table": "| a | b |\n|---|---|\n| 1 | 2 |\n1) x\n\nAfter.\n",
    "bullets then numbered steps": "- a\n- b\n\n1. one\n\n2. two\n\n* star\n\n+ plus\n",
    "numbers with either delimiter": "1) a\n\n2) b\n\n3. c\n\n4. d\n",
    # A line right below an item, no blank line between, that first reads as a block of its own
    # ("*" a bullet, "3" an item to be, "#" a heading) and then continues the item's paragraph.
    "a line below an item that starts as a bullet": "- item\n*Note* this continues it.\n\nAfter.\n",
    "a number below an item": "- d\n3.5 is in d.\n",
    "emphasis below a loose item": "1. a\n\n2. b\n*x* is in b\n",
    "a hash below an item": "1. step\n#hashtag, not a heading\n- next\n",
    # HTML blocks, which Textual draws as nothing: its append updated the block before one with
    # what follows it, and a paragraph that became one ("<d", then "<div>") stayed.
    "a list, an HTML block, a list": "- a\n\n<div>x</div>\n\n- b\n",
    "a paragraph that becomes an HTML block": "Intro.\n\n<details>\n<summary>More</summary>\n\nHidden.\n</details>\n\nAfter.\n",
    "an HTML block then code": "<div>html</div>\n```\ncode\n```\n\nEnd.\n",
    "a loose list after settled blocks":
        "".join(f"Paragraph {n}.\n\n" for n in range(12)) + "1. a\n\n2. b\n\n3. c\n\nEnd.\n",
}


class Side(App[None]):
    """A streaming markdown beside the same text as Textual's ``Markdown`` builds it whole."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield StreamingMarkdown(id="live")
            yield Markdown(self.text, id="whole")


def rows_of(app: App, widget_id: str):
    return painted(app, app.query_one(f"#{widget_id}").region)


@pytest.mark.parametrize("piece", [1, 3, 17])
@pytest.mark.parametrize("name", list(LISTS))
async def test_a_streamed_list_paints_as_the_whole_text_loaded(name, piece):
    text = LISTS[name]
    app = Side(text)
    async with app.run_test(size=(70, 80)) as pilot:
        live = app.query_one("#live", StreamingMarkdown)
        for start in range(0, len(text), piece):
            await live.append(text[start:start + piece])
            await pilot.pause()
        await live.flush()
        live.stop_growing()  # the answer ends (AssistantMessageView.finish): no room kept below it
        await pilot.pause()
        assert rows_of(app, "live") == rows_of(app, "whole")


async def test_a_word_added_to_the_last_item_mounts_nothing():
    app = Side("")
    async with app.run_test(size=(70, 40)) as pilot:
        live = app.query_one("#live", StreamingMarkdown)
        await live.append("- first point\n- second")
        await pilot.pause()
        shown = list(live.query("*"))
        listed = live.children[-1]  # the list
        await live.append(" point, longer")
        await pilot.pause()
        await live.append(" still\n- a third")
        await pilot.pause()
        assert live.children[-1] is listed
        after = list(live.query("*"))
        assert after[:len(shown)] == shown  # the same widgets, the third item's row added after them
        assert len(after) == len(shown) + 4  # its row, bullet, column and paragraph


@pytest.mark.parametrize("before", ["- a\n- b\n\n", "1) a\n2) b\n\n", "- a\n\n"])
async def test_a_list_after_another_kind_of_list_grows_in_place(before):
    # A list that cannot join the list before it (another marker) is not parsed from that list:
    # it was, and was mounted again at every append (5 bullets then 30 numbered steps: 246 against
    # 30 ms an append late in the answer; found by a fuzz of the loose-list change).
    app = Side("")
    async with app.run_test(size=(70, 40)) as pilot:
        live = app.query_one("#live", StreamingMarkdown)
        await live.append(before + "1. one\n2. two")
        await pilot.pause()
        shown = list(live.query("*"))
        listed = live.children[-1]
        await live.append(" more")
        await pilot.pause()
        assert live.children[-1] is listed
        assert list(live.query("*")) == shown
