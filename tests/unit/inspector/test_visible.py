"""Tool text on a page: control, zero-width and bidi characters become visible escapes; autoescape does the rest."""

from __future__ import annotations

from dossier.inspector.app import templates, visible


def test_invisible_characters_are_shown_as_escapes_and_newlines_stay() -> None:
    assert visible("a\x1b[31mb\x07\u202ec\u200bd\ufeff\n\te") == "a\\x1b[31mb\\x07\\u202ec\\u200bd\\ufeff\n\te"
    assert visible(None) == ""


def test_every_template_autoescapes() -> None:
    env = templates().env
    rendered = env.from_string("{{ x|visible }}").render(x="<script>alert(1)</script>\x00")
    assert rendered == "&lt;script&gt;alert(1)&lt;/script&gt;\\x00"
    for name in env.list_templates():
        assert env.autoescape(name) if callable(env.autoescape) else env.autoescape, name
        assert "|safe" not in (env.loader.get_source(env, name)[0]), name
