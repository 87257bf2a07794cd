"""What the server warns of in its search answers reaches the harvest's report: each distinct
text once, counted, a few at most, one line with its controls made visible."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

import mediaframe as mf
from mediaframe.cache import HarvestStore
from mediaframe.harvest import Spec, harvest
from mediaframe.harvest.warned import ServerWarnings
from mediaframe.normalise import search_warning

from .fake import FakeService, combine

APPROXIMATE = "results are approximate: the index is being rebuilt"


def run(service, tmp_path, **options):
    options.setdefault("bases", (1, 2, 3))
    options.setdefault("per_page", 40)
    return harvest(
        service, Spec("records"), HarvestStore(str(tmp_path / "h")), combine=combine, **options
    )


@pytest.mark.parametrize("empty", ["", "   ", None, False, 0, [], {}])
def test_a_warning_member_that_says_nothing_is_no_warning(empty):
    assert search_warning({"warning": empty}) is None
    assert search_warning({}) is None and search_warning(None) is None


def test_a_warning_is_one_line_with_its_controls_made_visible():
    said = search_warning({"warning": " part\n\t'foo:'  \x1b[31mignored\x1b[0m\u202e\u200d "})
    assert said == "part 'foo:' \ufffd[31mignored\ufffd[0m\ufffd\u200d"
    assert search_warning({"warning": {"kind": 3}}) == "{'kind': 3}"  # another age's object
    assert len(search_warning({"warning": "x" * 5000}) or "") == 500


def test_the_same_text_is_kept_once_with_its_count_and_a_few_texts_at_most():
    heard = ServerWarnings()
    for n in range(40):
        heard.hear({"warning": APPROXIMATE})
        heard.hear({"warning": f"shard {n}: part ignored"})
        heard.hear({"warning": ""})
    counts = heard.counts()
    assert counts[APPROXIMATE] == 40
    assert len(counts) <= ServerWarnings.KEPT + 1  # the kept texts, and the others' count
    assert sum(counts.values()) == 80, "every warned answer counted, kept or not"
    merged = ServerWarnings()
    merged.merge(counts)
    merged.merge(counts)
    assert merged.counts()[APPROXIMATE] == 80 and sum(merged.counts().values()) == 160


def test_a_harvest_keeps_what_its_counts_and_pages_warned_in_its_notes(tmp_path):
    service = FakeService.build(2000, cap=100, warning=lambda params: APPROXIMATE)
    frame, report = run(service, tmp_path)
    assert report.complete and len(frame) == 2000
    assert report.server_warnings == {APPROXIMATE: service.requests}
    assert report.notes == [f"the server warned in {service.requests} answer(s): {APPROXIMATE!r}"]
    assert report.summary().endswith(", the server warned (see its notes)")
    assert "the server warned in" in repr(report) and "being rebuilt" in repr(report)
    assert "the server warned in" in report._repr_html_()
    again = mf.HarvestReport.from_dict(report.to_dict())
    assert again.notes == report.notes and again.server_warnings == report.server_warnings


def test_a_harvest_with_no_warning_has_no_note(tmp_path):
    _, report = run(FakeService.build(300, cap=100), tmp_path)
    assert report.notes == [] and report.server_warnings == {}


def test_thousands_of_distinct_warnings_leave_a_few_notes(tmp_path):
    service = FakeService.build(2000, cap=100, warning=lambda params: f"took {params}")
    _, report = run(service, tmp_path, per_page=10)
    assert service.requests > 200
    assert len(report.notes) == ServerWarnings.KEPT + 1
    assert "more answer(s) of other things" in report.notes[-1]
    assert len(repr(report)) < 1500


def test_pages_read_where_the_counter_cannot_see_them_are_heard_too(tmp_path):
    # an executor of its own is how a Dask cluster runs shards: their pages are read in the
    # workers' processes, so their warnings come back with each shard's entry
    past_first_page = "deep paging is slow"
    service = FakeService.build(2000, cap=100)
    service.warning = lambda params: past_first_page if params["offset_start"] else ""
    with ThreadPoolExecutor(2) as executor:
        _, report = run(service, tmp_path, executor=executor)
    assert report.complete
    assert report.server_warnings.get(past_first_page, 0) > 0, report.server_warnings
