"""GitHub-style heading anchors, as teamgate's docs source makes them (for writing queries.tsv)."""
import re
import sys


def slug(heading):
    rendered = re.sub(r"\]\([^)]*\)", "", heading)
    out = []
    for c in rendered.lower():
        if c == " ":
            out.append("-")
        elif c.isalnum() or c in "-_":
            out.append(c)
    return "".join(out)


def headings(path):
    seen, fence = {}, None
    for line in open(path, encoding="utf-8"):
        t = line.lstrip()
        if fence:
            if t.startswith(fence):
                fence = None
            continue
        if t.startswith("```") or t.startswith("~~~"):
            fence = t[:3]
            continue
        m = re.match(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$", line.rstrip("\n"))
        if not m:
            continue
        text = (m.group(2) or "").rstrip("#").rstrip()
        base = slug(text)
        n = seen.get(base, 0)
        seen[base] = n + 1
        yield len(m.group(1)), text, base if n == 0 else f"{base}-{n}"


if __name__ == "__main__":
    for path in sys.argv[1:]:
        for level, text, anchor in headings(path):
            print(f"{path.rsplit('/', 1)[-1]}#{anchor}\t{'#' * level} {text}")
