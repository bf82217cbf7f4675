"""The study URL's rules, pure: which query a visit carries, and the completion link filled."""

from __future__ import annotations

from dealroom.protocol.study_join import (
    JoinRefusal,
    JoinRefused,
    JoinVisit,
    StudyJoin,
    completion_link,
    join_values,
)

PROLIFIC = StudyJoin(capacity=5, label="PROLIFIC_PID", ids=("STUDY_ID", "SESSION_ID"))


def test_a_visit_keeps_its_label_and_the_named_ids_and_ignores_other_parameters() -> None:
    query = {"PROLIFIC_PID": ["p1"], "SESSION_ID": ["s:1"], "utm": ["x y"]}
    assert join_values(PROLIFIC, query) == JoinVisit("p1", {"SESSION_ID": "s:1"})


def test_a_visit_without_one_good_label_or_with_a_bad_id_is_refused_by_code() -> None:
    for query, code in [
        ({}, JoinRefusal.BAD_LABEL),
        ({"PROLIFIC_PID": ["a", "a"]}, JoinRefusal.BAD_LABEL),
        ({"PROLIFIC_PID": ["-a"]}, JoinRefusal.BAD_LABEL),
        ({"PROLIFIC_PID": ["a"], "STUDY_ID": ["a/b"]}, JoinRefusal.BAD_ID),
    ]:
        refused = join_values(PROLIFIC, query)
        assert isinstance(refused, JoinRefused) and refused.code == code, query
        assert "\n" not in refused.message


def test_a_completion_link_fills_the_label_and_ids_url_encoded() -> None:
    url = "https://x.org/done?pid={label}&study={STUDY_ID}&s={SESSION_ID}"
    filled = completion_link(url, "a:b", {"STUDY_ID": "st 1&x"})
    assert filled == "https://x.org/done?pid=a%3Ab&study=st%201%26x&s="
    assert completion_link("https://x.org/done", "a", {}) == "https://x.org/done"
