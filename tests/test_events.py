"""Events the scheduler posts: what ``kubectl describe pod`` shows."""

from __future__ import annotations

from minisched.events import MAX_NOTE_LENGTH, truncate_message


def test_a_long_message_is_cut_to_the_note_limit_with_an_ellipsis() -> None:
    long = "x" * (MAX_NOTE_LENGTH + 10)
    cut = truncate_message(long)
    assert len(cut) == MAX_NOTE_LENGTH and cut.endswith(" ...")
    assert truncate_message("short") == "short"
    assert truncate_message("y" * MAX_NOTE_LENGTH) == "y" * MAX_NOTE_LENGTH
