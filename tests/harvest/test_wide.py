"""Records with thousands of distinct technical names go through a whole harvest unchanged.

Each step costs a constant per column: taking columns out one by one (``DataFrame.pop``)
rebuilt every remaining pandas block each time, so such a harvest never finished.
"""

from __future__ import annotations

import functools

import orjson
import pandas as pd

from mediaframe import frames
from mediaframe.cache import HarvestStore
from mediaframe.harvest import Spec, harvest
from mediaframe.harvest.assemble import in_row_order

from .fake import FakeService

NAMES = 3000


def _value(name: int, record: int) -> object:
    kind = name % 3
    if kind == 0 or (kind == 2 and record % 2):
        return name * 7 + record  # numbers; a third of the names mix them with text
    return f"t{name}.{record}"


def _wide(service: FakeService) -> FakeService:
    for index, record in enumerate(service.records):
        record["technical_informations"] = [
            {"name": f"tech{name:04d}", "value": _value(name, index)} for name in range(NAMES)
        ]
    return service


def _page_through_the_fast_reader(service: FakeService):
    def page(**params):
        answer = service.search(**params)
        body = orjson.dumps({"meta": {}, "response": answer})
        return frames.records_json(body)

    return page


def test_a_harvest_of_records_with_3000_technical_names_gives_the_reference_frame(tmp_path):
    service = _wide(FakeService.build(8, cap=3, bases=(1, 2, 3)))
    frame, report = harvest(
        _page_through_the_fast_reader(service),
        Spec("records"),
        HarvestStore(str(tmp_path / "h")),
        combine=functools.partial(frames.concat_records, consume=True),
        bases=(1, 2, 3),
        per_page=3,
    )
    assert report.complete and len(report.shards) > 1
    reference = (
        frames.records(service.records)
        .sort_values(["databox_id", "collection_id", "record_id"])
        .reset_index(drop=True)
    )
    technical = [name for name in frame.columns if name.startswith("tech")]
    assert len(technical) == NAMES
    pd.testing.assert_frame_equal(frame, reference)  # columns, dtypes, order and values
    cached, _ = HarvestStore(str(tmp_path / "h")).read_data()  # checked against its manifest
    pd.testing.assert_frame_equal(cached, reference)


def test_the_fast_reader_and_the_decoded_route_agree_on_3000_names():
    service = _wide(FakeService.build(4, cap=10))
    body = orjson.dumps({"meta": {}, "response": service.search(per_page=10)})
    _, fast = frames.records_json(body)
    pd.testing.assert_frame_equal(fast, frames.records(service.records))
    assert {str(fast[f"tech{n:04d}"].dtype) for n in range(0, NAMES, 3)} == {"Int64"}
    assert {str(fast[f"tech{n:04d}"].dtype) for n in range(1, NAMES, 3)} == {"string"}


def test_sorting_a_wide_frame_moves_every_column_and_renumbers_the_rows():
    items = [
        {
            "databox_id": 1,
            "record_id": record,
            "collection_id": 2 - record % 2,
            "technical_informations": [
                {"name": f"n{name}", "value": _value(name, record)} for name in range(NAMES)
            ],
        }
        for record in (5, 3, 4, 1, 2)
    ]
    frame = frames.records(items)
    frame = frame[frame["record_id"] != 4]  # as after dropping a duplicate: the index has a gap
    expected = (
        frame.sort_values(["databox_id", "collection_id", "record_id"])
        .reset_index(drop=True)
        .copy()
    )
    given = [frame.copy()]
    ordered = in_row_order(given, ["databox_id", "collection_id", "record_id"])
    assert given == []  # taken out, its columns let go as they were moved
    pd.testing.assert_frame_equal(ordered, expected)
    assert list(ordered.index) == [0, 1, 2, 3]
