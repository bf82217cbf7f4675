"""One error root: every error class dealroom defines is a DealroomError with its own code, and
the tree in protocol/errors.py's docstring names each one."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import dealroom
from dealroom.agents.roster import RosterError
from dealroom.play.registry import AgentSpecError, resolve_player
from dealroom.protocol import DealroomError, ErrorCode, RuleViolation, errors
from dealroom.protocol.generator import ScenarioFileError

# training/remote.py is the standard library only (copied into other projects): outside the root.
STANDALONE = {"dealroom.training.remote.RemoteError", "dealroom.training.remote.McpError"}


def defined_exceptions() -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    for info in pkgutil.walk_packages(dealroom.__path__, "dealroom."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                and value.__module__ == info.name
            ):
                found.append(value)
    return found


def qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_every_error_dealroom_defines_is_under_the_root() -> None:
    classes = defined_exceptions()
    assert len(classes) >= 20
    outside = {qualified(c) for c in classes if not issubclass(c, DealroomError)}
    assert outside == STANDALONE


def test_each_error_class_has_its_own_stable_code() -> None:
    classes = [c for c in defined_exceptions() if issubclass(c, DealroomError)]
    kinds = [c.kind for c in classes if "kind" in vars(c)]
    assert len(kinds) == len(set(kinds)), kinds
    coded_per_case = {"RuleViolation", "RoomError", "Refusal", "CallRefused", "SeatError"}
    coded_per_case |= {"ArgumentError"}
    for cls in classes:
        assert "kind" in vars(cls) or "code" in vars(cls) or cls.__name__ in coded_per_case, cls
        assert re.fullmatch(r"[a-z_]+", cls.kind), cls


def test_the_docstring_tree_names_every_error_under_the_root() -> None:
    tree = errors.__doc__ or ""
    drawn = set(re.findall(r"[├└]── (\w+)", tree))
    classes = {c.__name__ for c in defined_exceptions() if issubclass(c, DealroomError)}
    assert drawn == classes - {"DealroomError"}


def test_spec_and_file_errors_are_still_value_errors() -> None:
    for cls in (AgentSpecError, ScenarioFileError, RosterError):
        assert issubclass(cls, ValueError) and issubclass(cls, DealroomError)
    with pytest.raises(ValueError, match="unknown agent") as info:
        resolve_player("no_such_agent")
    assert isinstance(info.value, DealroomError) and info.value.code == "agent_spec"


def test_a_refused_action_carries_its_rule_code() -> None:
    violation = RuleViolation(ErrorCode.OWN_OFFER, "That is your own offer.")
    assert violation.code is ErrorCode.OWN_OFFER
    assert isinstance(violation, DealroomError)
    assert str(violation) == "own_offer: That is your own offer."
