"""Without the negmas extra, a negmas: spec is one sentence with code missing_extra, and
``dealroom agents`` says how to install it instead of failing (runs with or without NegMAS)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pytest

from dealroom.agents import AgentSpecError, MissingExtraError, is_scripted, negmas_specs, resolve
from dealroom.cli import main


@pytest.fixture
def without_negmas(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``import negmas...`` and ``import negmas_genius_agents`` fail, as without the extra."""
    real = importlib.import_module

    def refuse(name: str, package: str | None = None) -> Any:
        if name.split(".")[0] in ("negmas", "negmas_genius_agents"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real(name, package)

    monkeypatch.setattr(negmas_specs.importlib, "import_module", refuse)
    negmas_specs.negmas_classes.cache_clear()
    negmas_specs.genius_classes.cache_clear()
    yield
    negmas_specs.negmas_classes.cache_clear()
    negmas_specs.genius_classes.cache_clear()


@pytest.mark.parametrize("spec", ["negmas:BoulwareTBNegotiator", "negmas:HardHeaded:guard=1"])
def test_a_negmas_spec_without_the_extra_is_one_sentence_with_a_stable_code(
    without_negmas: None, spec: str
) -> None:
    with pytest.raises(MissingExtraError) as error:
        resolve(spec)
    assert error.value.code == "missing_extra"
    assert isinstance(error.value, AgentSpecError)  # the CLI prints it as a usage error
    assert "\n" not in str(error.value)
    assert "pip install 'dealroom[negmas]'" in str(error.value)
    with pytest.raises(MissingExtraError):
        is_scripted(spec)


def test_a_match_without_the_extra_fails_in_one_line_without_a_traceback(
    without_negmas: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["match", "--buyer", "negmas:HardHeaded", "--seller", "boulware", "--secret", "5eed" * 8]
    )
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("dealroom: error: ") and "dealroom[negmas]" in err


def test_dealroom_agents_without_the_extra_says_how_to_install_it(
    without_negmas: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["agents"]) == 0
    out = capsys.readouterr().out
    assert "negmas:CLASS" in out
    assert "(none here: " in out and "pip install 'dealroom[negmas]'" in out


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [("negmas", "needs CLASS"), ("negmas:", "needs CLASS"), ("negmas: :guard=1", "needs CLASS")],
)
def test_a_negmas_spec_without_a_class_is_refused(spec: str, fragment: str) -> None:
    with pytest.raises(AgentSpecError, match=fragment):
        resolve(spec)
