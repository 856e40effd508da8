"""A Jinja2 template's syntax checked before anything runs: a mistake in it (``{{ }}``, an
``{% if %}`` never closed) is one line naming its file and line, not the same error on every
host when the template is rendered."""

from __future__ import annotations

from pathlib import Path

__all__ = ["check_template"]

# Templates included or extended, followed at most this deep: a loop of includes ends.
_MAX_INCLUDES = 20


def check_template(path: Path) -> None:
    """Parse the template at ``path``, and those it includes, imports or extends by a literal
    name (found beside it, when there), without rendering them.

    Raises:
        ValueError: ``FILE:LINE: template syntax error: ...`` for the first mistake.
    """
    import jinja2
    import jinja2.meta

    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(path.parent))
    waiting, seen = [path.name], set[str]()
    while waiting and len(seen) < _MAX_INCLUDES:
        name = waiting.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            source = environment.loader.get_source(environment, name)[0]  # type: ignore[union-attr]
            tree = environment.parse(source, name, str(path.parent / name))
        except jinja2.TemplateNotFound:  # an include may be optional: rendering says
            continue
        except jinja2.TemplateSyntaxError as exc:
            raise ValueError(
                f"{exc.filename or path.parent / name}:{exc.lineno}: template syntax error: "
                f"{' '.join(str(exc.message).split())}"
            ) from None
        waiting += [n for n in jinja2.meta.find_referenced_templates(tree) if n is not None]
