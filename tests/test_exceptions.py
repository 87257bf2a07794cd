"""The error tree is one tree, drawn in its docstring, and every class sits where it says."""

import inspect
import re
from pathlib import Path

import mediaframe
from mediaframe import exceptions


def _classes():
    return {
        name: obj
        for name, obj in vars(exceptions).items()
        if inspect.isclass(obj) and issubclass(obj, BaseException | Warning)
    }


def test_every_error_has_one_root():
    for name, cls in _classes().items():
        warning = issubclass(cls, Warning)
        root = exceptions.MediaframeWarning if warning else exceptions.MediaframeError
        assert issubclass(cls, root), name


def test_docstring_draws_the_whole_tree_with_the_right_parents():
    doc = exceptions.__doc__
    # depth is the column where the name starts in the drawing
    drawn = [
        (match.start(2) - match.start(1), match.group(2))
        for match in re.finditer(r"^( *[│├└─ ]*)([A-Z]\w+(?:Error|Warning))\b", doc, re.MULTILINE)
    ]
    names = [name for _, name in drawn]
    assert sorted(names) == sorted(_classes()), "every class is drawn exactly once"
    stack: list[tuple[int, str]] = []
    for depth, name in drawn:
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            parent = getattr(exceptions, stack[-1][1])
            assert parent in getattr(exceptions, name).__mro__, f"{name} under {parent.__name__}"
        stack.append((depth, name))


def test_public_surface_exports_the_tree():
    for name in exceptions.__all__:
        assert getattr(mediaframe, name) is getattr(exceptions, name)


def test_api_error_carries_context():
    err = exceptions.NotFoundError(
        "Record 3 on database 1 not found",
        status_code=404,
        error_type="Not Found",
        error_details="Record 3 on database 1 not found",
        request="GET /api/v1/records/1/3/",
    )
    assert isinstance(err, exceptions.APIError)
    assert (err.status_code, err.request) == (404, "GET /api/v1/records/1/3/")


def test_invalid_parameter_is_also_a_value_error():
    assert issubclass(exceptions.InvalidParameterError, ValueError)


def test_docs_errors_md_lists_every_exit_code_of_the_command_line():
    """docs/errors.md and docs/cli.md give the same exit codes as the command line has."""
    from mediaframe.cli import app

    codes = {0, app.EXIT_ERROR, app.EXIT_CONFIGURATION, app.EXIT_AUTHENTICATION}
    codes.add(app.EXIT_INTERRUPTED)
    docs = Path(__file__).parents[1] / "docs"
    for page in ("errors.md", "cli.md"):
        text = (docs / page).read_text(encoding="utf-8")
        section = text.split("xit codes", 1)[1].split("\n#", 1)[0]
        listed = {int(code) for code in re.findall(r"^\| (\d+) \|", section, re.M)}
        assert listed == codes, f"docs/{page}"
