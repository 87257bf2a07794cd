"""docs/frame-schema.md is generated from the schema declaration and must not go stale."""

from __future__ import annotations

from pathlib import Path

import pytest

import mediaframe.frames as frames
from mediaframe.frames import render_markdown
from mediaframe.frames.schema import FRAMES

DOC = Path(__file__).parents[2] / "docs" / "frame-schema.md"


def test_generated_page_is_current():
    if DOC.read_text(encoding="utf-8") != render_markdown():
        pytest.fail(
            "docs/frame-schema.md is stale: run "
            "`python -m mediaframe.frames > docs/frame-schema.md` and commit it"
        )


def test_every_declared_frame_has_its_public_function():
    for name in FRAMES:
        assert name in frames.__all__, name


def test_public_surface_is_pinned():
    assert sorted(frames.__all__) == [
        "COLLECTION_RIGHTS",
        "DATABOX_RIGHTS",
        "RecordsPage",
        "Structure",
        "basket_records",
        "baskets",
        "collections",
        "concat_records",
        "databoxes",
        "facets",
        "feed_entries",
        "feed_items",
        "feeds",
        "fields",
        "read_records",
        "records",
        "records_json",
        "render_markdown",
        "search_info",
        "split_values",
        "statuses",
        "stories",
        "story_members",
        "story_record_frame",
        "story_records",
        "structure",
        "suggestions",
        "technical_long",
        "technical_wide",
        "user",
        "v2_results",
        "with_base_ids",
    ]
