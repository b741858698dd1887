"""Offline checks of a built mdBook: every local link and #anchor resolves, no directive is left.

mdBook itself never checks links, and a failed `{{#include}}` leaves the raw directive in
the page, so the strict book check runs this over the HTML it just built. Standard library
only. External links (http:, https:, mailto:) are not fetched: the book must build offline.

    python3 -m pul.linkcheck BUILD_DIR [--site-url /play-under-load/]
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

# Attributes that point at another resource, per tag. mdBook emits only these.
LINK_ATTRIBUTES = {
    "a": "href", "link": "href", "area": "href",
    "img": "src", "script": "src", "iframe": "src", "source": "src", "embed": "src",
    "object": "data",
}
LEFTOVER_DIRECTIVE = re.compile(r"\{\{#[^}\n]{0,200}\}?\}?")


@dataclass
class Link:
    line: int
    tag: str
    url: str


@dataclass
class Page:
    ids: set[str] = field(default_factory=set)
    links: list[Link] = field(default_factory=list)
    base: str | None = None


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value for name, value in attrs if value is not None}
        if "id" in values:
            self.page.ids.add(values["id"])
        if tag == "a" and "name" in values:
            self.page.ids.add(values["name"])
        if tag == "base" and "href" in values and self.page.base is None:
            self.page.base = values["href"]
        attribute = LINK_ATTRIBUTES.get(tag)
        if attribute and attribute in values:
            self.page.links.append(Link(self.getpos()[0], tag, values[attribute].strip()))

    handle_startendtag = handle_starttag


def parse_page(text: str) -> Page:
    parser = _PageParser()
    parser.feed(text)
    parser.close()
    return parser.page


def _is_external(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.scheme) or url.startswith("//")


class Checker:
    """Checks every .html file under `root`. `site_url` is the path the site is served under
    (mdBook's `site-url`, e.g. /play-under-load/); absolute links below it map to `root`."""

    def __init__(self, root: Path, site_url: str | None = None) -> None:
        self.root = root.resolve()
        self.site_url = "/" + (site_url or "/").strip("/") + "/" if site_url and site_url.strip("/") else "/"
        self._pages: dict[Path, Page] = {}

    def page(self, path: Path) -> Page:
        if path not in self._pages:
            self._pages[path] = parse_page(path.read_text(encoding="utf-8", errors="replace"))
        return self._pages[path]

    def html_files(self) -> list[Path]:
        return sorted(self.root.rglob("*.html"))

    def check(self) -> list[str]:
        problems: list[str] = []
        for path in self.html_files():
            problems += self.leftover_directives(path)
            problems += self.check_links(path)
        # mdBook 0.5 writes each image twice (for its click-to-zoom): report a problem once.
        return list(dict.fromkeys(problems))

    def _where(self, path: Path, line: int) -> str:
        return f"{path.relative_to(self.root)}:{line}"

    def leftover_directives(self, path: Path) -> list[str]:
        problems = []
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for match in LEFTOVER_DIRECTIVE.finditer(line):
                problems.append(f"{self._where(path, number)}: mdBook directive left in the page "
                                f"(a failed include?): {match.group(0)}")
        return problems

    def _resolve(self, path: Path, base: str | None, url_path: str) -> Path | None:
        """The file a link's path names, or None when it points outside the site."""
        if url_path.startswith("/"):
            if not url_path.startswith(self.site_url) and url_path + "/" != self.site_url:
                return None
            target = self.root / unquote(url_path[len(self.site_url):])
        else:
            directory = path.parent
            if base is not None and not _is_external(base):
                # <base href> (mdBook's 404 page sets it to site-url) moves relative links.
                base_dir = self._resolve(path, None, base.rsplit("/", 1)[0] + "/")
                if base_dir is None:
                    return None
                directory = base_dir
            target = directory / unquote(url_path)
        try:
            resolved = target.resolve()
            resolved.relative_to(self.root)
        except ValueError:
            return None
        return resolved

    def check_links(self, path: Path) -> list[str]:
        problems = []
        page = self.page(path)
        for link in page.links:
            url = link.url
            if not url or _is_external(url):
                continue
            parts = urlsplit(url)
            where = self._where(path, link.line)
            if parts.path:
                target = self._resolve(path, page.base, parts.path)
                if target is None:
                    problems.append(f"{where}: <{link.tag}> {url!r} points outside the book"
                                    f" (served under {self.site_url})")
                    continue
                if target.is_dir():
                    target = target / "index.html"
                if not target.is_file():
                    problems.append(f"{where}: <{link.tag}> {url!r}: no such file "
                                    f"{target.relative_to(self.root)}")
                    continue
            else:
                # A bare "#x" is checked against its own page, as mdBook means it (even on the
                # 404 page, whose <base href> would make a browser send it to the front page).
                target = path
            fragment = unquote(parts.fragment)
            if fragment and target.suffix == ".html" and fragment not in self.page(target).ids:
                problems.append(f"{where}: <{link.tag}> {url!r}: no element with id {fragment!r} "
                                f"in {target.relative_to(self.root)}")
        return problems


def check_built_book(root: Path, site_url: str | None = None) -> list[str]:
    return Checker(root, site_url).check()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="linkcheck", description=__doc__.split("\n\n")[0])
    parser.add_argument("build_dir", type=Path, help="the built book (mdBook's HTML output)")
    parser.add_argument("--site-url", default=None, help="the path the book is served under")
    options = parser.parse_args(argv)
    if not (options.build_dir / "index.html").is_file():
        print(f"linkcheck: {options.build_dir} has no index.html: not a built book", file=sys.stderr)
        return 2
    checker = Checker(options.build_dir, options.site_url)
    problems = checker.check()
    for problem in problems:
        print(problem)
    pages = len(checker.html_files())
    links = sum(len(checker.page(p).links) for p in checker.html_files())
    print(f"linkcheck: {pages} pages, {links} local and external links, {len(problems)} problems",
          file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
