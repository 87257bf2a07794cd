"""Print docs/frame-schema.md: ``python -m mediaframe.frames > docs/frame-schema.md``."""

from mediaframe.frames.schema import render_markdown

print(render_markdown(), end="")
