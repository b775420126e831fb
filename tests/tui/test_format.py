"""How times, ages and counts read (TZ=UTC, set by the autouse fixture; "now" is passed in)."""

from __future__ import annotations

from lovia.tui import format

T = 1796212800.0  # 2026-12-02 12:00:00 UTC


def test_times_read_to_the_second():
    assert format.when(T + 9) == "2026-12-02 12:00:09"
    assert format.when(None) == "—"


def test_ages_are_relative_to_the_now_passed_in():
    assert format.ago(T, now=T + 2) == "just now"
    assert format.ago(T, now=T + 42) == "42 s ago"
    assert format.ago(T, now=T + 3 * 60 + 59) == "3 min ago"
    assert format.ago(T, now=T + 5 * 3600) == "5 h ago"
    assert format.ago(T, now=T + 86400) == "1 day ago"
    assert format.ago(T, now=T + 3 * 86400) == "3 days ago"
    assert format.ago(T + 180, now=T) == "in 3 min"


def test_a_list_time_has_both():
    assert format.when_ago(T + 9, now=T + 9 + 180) == "2026-12-02 12:00:09 · 3 min ago"
    assert format.when_ago(None, now=T) == "—"


def test_a_list_time_gives_up_its_seconds_then_its_age_to_fit_rather_than_cut_a_word():
    """The sessions list at 80 columns read "2026-12-05 21:33:27 · 4 min a…"."""
    assert format.when_ago(T + 9, now=T + 9 + 240, width=31) == "2026-12-02 12:00:09 · 4 min ago"
    assert format.when_ago(T + 9, now=T + 9 + 240, width=30) == "2026-12-02 12:00 · 4 min ago"
    assert format.when_ago(T, now=T + 120 * 86400, width=30) == "2026-12-02 12:00"  # "· 120 days ago" has no room
    assert len(format.when_ago(T, now=T + 42 * 86400, width=30)) <= 30
    assert format.when_ago(T, now=T + 300, width=12) == "2026-12-02 …"  # never wider than asked


def test_counts_agree_in_number():
    assert format.count(1, "old tool output") == "1 old tool output"
    assert format.count(2, "entry", "entries") == "2 entries"
    assert format.count(0, "run") == "0 runs"


def test_sizes_agree_in_number():
    assert format.size(1) == "1 char"
    assert format.size(812) == "812 chars"
    assert format.size(12_300) == "12.3k chars"
