"""``dealroom play``: a person at a terminal reads its briefing, hints and refusals in the
terminal's own commands, never a seat tool's name."""

from __future__ import annotations

import io

import pytest

from dealroom.cli import main
from dealroom.protocol import people_text

SECRET = "fb8e20fc2e4c3f248c60c39bd652f3c1"


@pytest.mark.parametrize("clock", ["virtual", "wall"])
def test_a_terminal_player_reads_its_commands_not_tool_names(
    clock: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wait = "wait 1" if clock == "wall" else "wait 5"  # a wall-clock wait takes real seconds
    typed = ["offer 100", "accept o99", "say", "offer 99999999", wait, "state", "walk bye"]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(typed) + "\n"))
    args = ["play", "--opponent", "hardliner", "--secret", SECRET, "--clock", clock]
    assert main(args) == 0
    out = capsys.readouterr().out
    played = out.split("\nScenario ")[0]  # the record printed after the end names both values
    assert people_text.tool_names_in(played) == []
    assert "To make an offer, type offer PRICE." in played
    assert "To hear from the other side, type wait." in played  # the terminal never updates
    if clock == "virtual":  # on the wall clock the house agent may not have moved yet
        assert "They offer $" in played and "type accept or type reject" in played
    assert "refused: There is no offer 'o99'. Only their live offer can be accepted" in played
    assert "refused: The price must be above 0 and at most" in played
    assert "after 10 of them you forfeit" in played
    assert "The negotiation is over: no deal (a side walked away)" in played
