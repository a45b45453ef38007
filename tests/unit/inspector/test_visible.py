"""Tool text on a page: control, zero-width and bidi characters become visible escapes; autoescape does the rest."""

from __future__ import annotations

from dossier.inspector.app import templates, visible


def test_invisible_characters_are_shown_as_escapes_and_newlines_stay() -> None:
    assert visible("a\x1b[31mb\x07\u202ec\u200bd\ufeff\n\te") == "a\\x1b[31mb\\x07\\u202ec\\u200bd\\ufeff\n\te"
    assert visible(None) == ""


def test_every_invisible_character_class_is_escaped_on_a_page_and_in_a_terminal() -> None:
    """Tag characters (hidden "ASCII smuggling"), the Arabic letter mark, a soft hyphen, a private-use and an
    unassigned code point are invisible too; a page and the CLI escape the same characters the same way."""
    from dossier.commands.audit import printable

    hostile = "a\U000e0041\U000e0042b\u061cc\u00add\ue000e\U000e007ff\u0378g\x85h\n\ti"
    expected = "a\\U000e0041\\U000e0042b\\u061cc\\xadd\\ue000e\\U000e007ff\\u0378g\\x85h\n\ti"
    assert visible(hostile) == expected
    assert printable(hostile) == expected


def test_every_template_autoescapes() -> None:
    env = templates().env
    rendered = env.from_string("{{ x|visible }}").render(x="<script>alert(1)</script>\x00")
    assert rendered == "&lt;script&gt;alert(1)&lt;/script&gt;\\x00"
    for name in env.list_templates():
        assert env.autoescape(name) if callable(env.autoescape) else env.autoescape, name
        assert "|safe" not in (env.loader.get_source(env, name)[0]), name
