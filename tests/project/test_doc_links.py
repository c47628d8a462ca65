"""Every relative link of README.md, ARCHITECTURE.md and docs/*.md resolves: to a file that exists, and to one of
its headings when it has a `#anchor` (GitHub's anchors: the heading in lower case, punctuation dropped, spaces as
hyphens). The README's topics each link to their page, and docs/README.md indexes every page."""
import pathlib
import re

import doc_pages

LINK = re.compile(r"\[((?:[^\[\]`]|`[^`]*`)*)\]\(([^()\s]+)\)")  # [text](target); the text may hold `code`
FENCE = re.compile(r"^```.*?^```[^\n]*$", re.S | re.M)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, ...


def prose(text: str) -> str:
    """The page without its fenced blocks, whose `#` lines are no headings and whose brackets are no links."""
    return FENCE.sub("", text)


def anchors(text: str) -> set:
    """GitHub's anchors for the headings of a Markdown page (a repeated heading gets -1, -2, ...)."""
    found, seen = set(), {}
    for heading in re.findall(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", prose(text), re.M):
        heading = LINK.sub(r"\1", heading)  # a link in a heading keeps its text
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(text: str) -> list:
    """The target of every inline link in the page's prose."""
    return [target for _, target in LINK.findall(prose(text))]


def broken_links(root: pathlib.Path, names) -> list:
    """(page, target, what is wrong) for every relative link of the pages `names` (relative to `root`) that does
    not resolve."""
    broken = []
    for name in names:
        page = root / name
        for target in links(page.read_text(encoding="utf-8")):
            if EXTERNAL.match(target):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page.resolve()
            if not linked.exists():
                broken.append((name, target, "no such file"))
            elif root.resolve() not in linked.parents and linked != root.resolve():
                broken.append((name, target, "outside the repository"))
            elif anchor and (linked.suffix != ".md"
                             or anchor not in anchors(linked.read_text(encoding="utf-8"))):
                broken.append((name, target, "no such heading"))
    return broken


def test_every_relative_link_of_the_pages_resolves():
    names = doc_pages.pages()
    assert {"README.md", "ARCHITECTURE.md", "docs/README.md", "docs/porting.md"} <= set(names)
    assert broken_links(doc_pages.ROOT_PATH, names) == []
    readme_links = links(doc_pages.read("README.md"))
    assert sum("#" in target for target in readme_links) >= 5  # the anchors were checked, not only the files


def test_the_readme_links_every_docs_page_and_the_index_lists_every_page_once():
    pages = sorted(p.name for p in doc_pages.DOCS.glob("*.md") if p.name != "README.md")
    readme = {target.partition("#")[0] for target in links(doc_pages.read("README.md"))}
    assert "docs/README.md" in readme
    # every topic the README gave up keeps a link from it; the layout is reached through the index
    missing = [name for name in pages if f"docs/{name}" not in readme and name != "layout.md"]
    assert missing == [], f"README.md links to no page of these: {missing}"
    index = [line for line in doc_pages.read("docs/README.md").splitlines() if line.startswith("- [")]
    assert sorted(links("\n".join(index))) == pages  # one line per page, each page once


def test_the_checker_finds_a_missing_file_a_missing_heading_and_accepts_what_resolves(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A page\n\n## What differs, and why\n\n## Notes\n\n## Notes\n"
                                            "```\n# not a heading\n[not](a-link.md)\n```\n", encoding="utf-8")
    (tmp_path / "README.md").write_text(
        "[ok](docs/a.md) [ok](docs/a.md#what-differs-and-why) [ok](docs/a.md#notes-1) [ok](#top)\n"
        "[`code` ok](https://example.com/x.md) [gone](docs/b.md) [gone](docs/a.md#not-a-heading)\n"
        "[gone](docs/a.md#notes-2) [gone](#nowhere) [out](../elsewhere.md)\n\n# Top\n", encoding="utf-8")
    (tmp_path.parent / "elsewhere.md").write_text("# Elsewhere\n", encoding="utf-8")
    assert broken_links(tmp_path, ["README.md", "docs/a.md"]) == [
        ("README.md", "docs/b.md", "no such file"),
        ("README.md", "docs/a.md#not-a-heading", "no such heading"),
        ("README.md", "docs/a.md#notes-2", "no such heading"),
        ("README.md", "#nowhere", "no such heading"),
        ("README.md", "../elsewhere.md", "outside the repository"),
    ]
