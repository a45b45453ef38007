"""Crawl the inspector as one viewer: every page reachable from the home page by its own links.

A crawl searches rather than lists: it starts at ``/`` and follows every same-site
link a page shows (breadth first, each URL once), so a page added later is
crawled without touching this module. ``/logout`` and ``/static`` are not
followed (the first ends the session, the second is the app's own files); what
the viewer may not open (a 4xx) is recorded with its status.
"""

from __future__ import annotations

import html
import re
from collections import deque

import httpx

_HREF = re.compile(r"""href="(/[^"#]*)""")
SKIP = ("/logout", "/static/", "/login")


def links(page: str) -> list[str]:
    """The same-site links of a page, unescaped, in order."""
    return [html.unescape(found) for found in _HREF.findall(page)]


async def crawl(http: httpx.AsyncClient, token: str, *, start: tuple[str, ...] = ("/",),
                limit: int = 400) -> dict[str, tuple[int, str]]:
    """``url -> (status, body)`` of every page reachable from ``start`` (at most ``limit`` pages).

    Args:
        http: a client on the inspector app.
        token: the viewer's bearer token.
    """
    seen: dict[str, tuple[int, str]] = {}
    queue = deque(start)
    while queue and len(seen) < limit:
        url = queue.popleft()
        if url in seen or url.startswith(SKIP):
            continue
        response = await http.get(url, headers={"Authorization": f"Bearer {token}"})
        seen[url] = (response.status_code, response.text)
        if response.status_code == 200 and "text/html" in response.headers.get("content-type", ""):
            queue.extend(link for link in links(response.text) if link not in seen)
    return seen


__all__ = ["crawl", "links"]
