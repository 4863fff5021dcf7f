#!/usr/bin/env python3
"""scripts/apiref.py: the C API reference, HTML and man 3 pages, made from the
public headers' own comments (scripts/docs.sh runs it; docs/api.md says how to
read the result).

    apiref.py --html DIR --man DIR HEADER...

The headers are the source of truth: what a reader of redlock.h sees above a
declaration is what the reference says about it, so the two cannot disagree.
A header is read as the project writes it:

  - its first comment is the header's overview;
  - a comment that starts "/* ---- Title ----" opens a section (the rest of
    that comment is the section's introduction);
  - any other comment on its own lines documents the declarations that follow
    it up to the next blank line or comment (one comment may cover several,
    e.g. the three option getters "The three switches"); a comment after a
    declaration on its line documents that declaration too;
  - entries are the REDLOCK_EXPORT functions, the typedefs (struct, enum,
    callback types), the #define constants and the error codes of
    REDLOCK_ERRNO_MAP.

Nothing here is a C parser: a declaration the patterns below do not know
stops the run with the line it could not read (so a new style of declaration
is noticed, not left out of the reference).
"""

import argparse
import html
import os
import re
import sys

# ---- reading a header ---------------------------------------------------------------


class Entry:
    def __init__(self, name, kind, decl, doc, section, header):
        self.name = name  # the identifier, also the HTML anchor and the man page's name
        self.kind = kind  # function, type, constant, error
        self.decl = decl  # the declaration as written (comments of a struct's fields kept)
        self.doc = doc  # the comment text, "" when none of its own
        self.section = section
        self.header = header
        # A comment above several declarations is the first one's; the others
        # show it as "the comment above it" (it may or may not be about them:
        # the header does not say), with the first one's name.
        self.shared_from = None
        self.shared = ""


class Section:
    def __init__(self, title, intro, anchor):
        self.title = title
        self.intro = intro
        self.anchor = anchor
        self.entries = []


class Header:
    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)
        self.overview = ""
        self.sections = []


def comment_text(raw):
    """The text of a /* ... */ comment: delimiters and the ' * ' margins off,
    indentation beyond the margin kept (lists and examples are laid out)."""
    body = raw.strip()
    assert body.startswith("/*") and body.endswith("*/"), raw
    body = body[2:-2]
    lines = body.split("\n")
    out = []
    for i, line in enumerate(lines):
        if i == 0:
            out.append(line.strip())
            continue
        s = line.lstrip()
        if s.startswith("* ") or s == "*":
            s = s[2:]
        elif s.startswith("*") and not s.startswith("*/"):
            s = s[1:]
        out.append(s.rstrip())
    while out and out[0] == "":
        out.pop(0)
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out)


SECTION_RE = re.compile(r"^-{3,}\s*(.*?)\s*-*\s*$")


def slug(text):
    return "sec-" + re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def split_section(text):
    """(title, intro) when the comment text opens a section, else None."""
    first, _, rest = text.partition("\n")
    m = SECTION_RE.match(first)
    if not m or not m.group(1):
        return None
    return m.group(1), rest.strip("\n")


def strip_comments(code):
    return re.sub(r"/\*.*?\*/", "", code, flags=re.S)


def decl_name(kind, code):
    """The name a declaration declares (code without comments)."""
    flat = " ".join(code.split())
    if kind == "function":
        m = re.search(r"([A-Za-z_]\w*)\s*\(", flat)
        return m.group(1) if m else None
    # typedef: a struct's or enum's name after its body, a function pointer
    # type's (*name), else the last identifier.
    if "{" in flat:
        m = re.search(r"}\s*([A-Za-z_]\w*)\s*;\s*$", flat)
        return m.group(1) if m else None
    m = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\(", flat)
    if m:
        return m.group(1)
    m = re.search(r"([A-Za-z_]\w*)\s*;\s*$", flat)
    return m.group(1) if m else None


ERR_RE = re.compile(r'XX\(\s*(\w+)\s*,\s*(-?\d+)\s*,\s*((?:"(?:[^"\\]|\\.)*"\s*)+)\)')

# An enumerator, "NAME [= value]," and the comment after it (which may go on
# over the next lines); not a macro call inside the body (NAME followed by "(").
ENUM_RE = re.compile(r"^[ \t]*(REDLOCK_\w+)[ \t]*(=[ \t]*[^,/\n]+?)?[ \t]*,?[ \t]*(/\*(.*?)\*/)?[ \t]*$",
                     re.M | re.S)

# Macros that are machinery, not API: the export attribute, include guards.
SKIP_DEFINES = re.compile(r"^(REDLOCK_EXPORT|REDLOCK(_\w+)?_H|REDLOCK__\w+)$")


def read_header(path):
    hdr = Header(path)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    sections = [Section("Definitions", "", "sec-definitions")]
    pending = ""  # the comment that documents the declarations after it
    pending_owner = []  # the first declaration under it
    i = 0
    n = len(lines)
    seen_first_comment = False

    def add(name, kind, decl, trailing, under_pending=True):
        own = trailing
        e = Entry(name, kind, decl, "", sections[-1], hdr)
        if under_pending and pending:
            if not pending_owner:
                pending_owner.append(name)
                own = "\n\n".join(t for t in (pending, trailing) if t)
            else:
                e.shared_from, e.shared = pending_owner[0], pending
        e.doc = own
        sections[-1].entries.append(e)

    while i < n:
        line = lines[i]
        s = line.strip()
        if s == "":
            pending = ""
            pending_owner.clear()
            i += 1
            continue
        if s.startswith("/*"):
            j = i
            while "*/" not in lines[j]:
                j += 1
            raw = "\n".join(lines[i : j + 1])
            text = comment_text(raw)
            i = j + 1
            if not seen_first_comment:
                seen_first_comment = True
                hdr.overview = text
                continue
            sec = split_section(text)
            if sec:
                title, intro = sec
                sections.append(Section(title, intro, slug(title)))
                pending = ""
            else:
                pending = text
            pending_owner.clear()
            continue
        if s.startswith("#define REDLOCK_ERRNO_MAP"):
            j = i
            while lines[j].rstrip().endswith("\\"):
                j += 1
            macro = " ".join(l.rstrip().rstrip("\\") for l in lines[i : j + 1])
            for m in ERR_RE.finditer(macro):
                msg = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(3)))
                name = "REDLOCK_" + m.group(1)
                decl = "%s = %s" % (name, m.group(2))
                doc = msg + "\n\nredlock_strerror(%s) returns this message." % name
                add(name, "error", decl, doc, under_pending=False)
            i = j + 1
            continue
        if s.startswith("#define "):
            m = re.match(r"#define\s+(\w+)(\([^)]*\))?\s*(.*)$", s)
            name, params, rest = m.group(1), m.group(2), m.group(3)
            trailing = ""
            cm = re.search(r"/\*(.*?)\*/\s*$", rest)
            if cm:
                trailing = cm.group(1).strip()
                rest = rest[: cm.start()].rstrip()
            if not params and not SKIP_DEFINES.match(name) and name.startswith("REDLOCK_"):
                add(name, "constant", "#define %s %s" % (name, rest), trailing)
            i += 1
            continue
        if s.startswith("REDLOCK_EXPORT") or s.startswith("typedef"):
            kind = "function" if s.startswith("REDLOCK_EXPORT") else "type"
            j = i
            code_lines = []
            while True:
                code_lines.append(lines[j])
                code = strip_comments("\n".join(code_lines))
                depth = code.count("{") - code.count("}")
                if depth == 0 and code.rstrip().endswith(";"):
                    break
                j += 1
                if j >= n:
                    sys.exit("%s:%d: declaration never ends" % (path, i + 1))
            whole = "\n".join(code_lines)
            trailing = ""
            last = code_lines[-1]
            cm = re.search(r";\s*/\*(.*?)\*/\s*$", last)
            if cm:
                trailing = cm.group(1).strip()
                whole = whole[: whole.rfind("/*")].rstrip()
            name = decl_name(kind, strip_comments(whole))
            if not name:
                sys.exit("%s:%d: cannot read the name of: %s" % (path, i + 1, s))
            decl = whole.replace("REDLOCK_EXPORT ", "")
            # A typedef enum's enumerators are constants too (REDLOCK_EVENT_*).
            if kind == "type" and "enum" in whole.split("{")[0]:
                body = whole[whole.find("{") + 1 : whole.rfind("}")]
                for em in ENUM_RE.finditer(body):
                    if em.group(1).startswith("REDLOCK__"):
                        continue
                    edoc = " ".join(em.group(4).replace("*", " ").split()) if em.group(4) else ""
                    edecl = em.group(1) + (" " + " ".join(em.group(2).split()) if em.group(2) else "")
                    tail = "An enumerator of %s." % name
                    add(em.group(1), "constant", edecl, edoc + "\n\n" + tail if edoc else tail,
                        under_pending=False)
            add(name, kind, decl, trailing)
            i = j + 1
            continue
        # Preprocessor lines (#if, #include, ...) and the extern "C" braces.
        if s.startswith("#") or s in ('extern "C" {', "}"):
            i += 1
            continue
        sys.exit("%s:%d: a line this reader does not know: %s" % (path, i + 1, s))
    hdr.sections = [sec for sec in sections if sec.entries or sec.intro]
    return hdr


# ---- HTML ---------------------------------------------------------------------------

CSS = """
body { font-family: sans-serif; max-width: 60em; margin: 1em auto; padding: 0 1em; color: #222; }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto; }
pre.doc { background: none; padding: 0; white-space: pre-wrap; font-family: inherit; }
.entry { border-top: 1px solid #ddd; margin-top: 1.2em; }
.kind { color: #777; font-size: 80%; font-weight: normal; }
nav ul { columns: 3; }
a { color: #0645ad; }
"""

KIND_TITLES = [("function", "Functions"), ("type", "Types"), ("error", "Error codes"),
               ("constant", "Constants")]


def page_name(hdr):
    return hdr.name.replace(".", "_") + ".html"


def linkify(text, targets, here, skip=None):
    """HTML-escapes text and links every name that has an entry (but skip,
    the entry's own name in its declaration)."""
    out = []
    pos = 0
    for m in re.finditer(r"\b(?:redlock|REDLOCK)_\w+\b", text):
        out.append(html.escape(text[pos : m.start()], quote=False))
        word = m.group(0)
        t = targets.get(word)
        if t and word != skip:
            page, anchor = t
            href = ("#" + anchor) if page == here else ("%s#%s" % (page, anchor))
            out.append('<a href="%s">%s</a>' % (href, html.escape(word)))
        else:
            out.append(html.escape(word))
        pos = m.end()
    out.append(html.escape(text[pos:], quote=False))
    return "".join(out)


def write_html(headers, outdir):
    os.makedirs(outdir, exist_ok=True)
    targets = {}
    for hdr in headers:
        for sec in hdr.sections:
            for e in sec.entries:
                targets.setdefault(e.name, (page_name(hdr), e.name))
    for hdr in headers:
        page = page_name(hdr)
        o = []
        o.append('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">')
        o.append("<title>%s: redlock-c API reference</title>" % html.escape(hdr.name))
        o.append('<link rel="stylesheet" href="style.css"></head><body>')
        o.append('<p><a href="index.html">redlock-c API reference</a></p>')
        o.append('<h1 id="top">%s</h1>' % html.escape(hdr.name))
        o.append('<pre class="doc">%s</pre>' % linkify(hdr.overview, targets, page))
        o.append("<nav><h2>Sections</h2><ul>")
        for sec in hdr.sections:
            o.append('<li><a href="#%s">%s</a></li>' % (sec.anchor, html.escape(sec.title)))
        o.append("</ul></nav>")
        for sec in hdr.sections:
            o.append('<section><h2 id="%s">%s</h2>' % (sec.anchor, html.escape(sec.title)))
            if sec.intro:
                o.append('<pre class="doc">%s</pre>' % linkify(sec.intro, targets, page))
            for e in sec.entries:
                o.append('<div class="entry" id="%s">' % e.name)
                o.append('<h3>%s <span class="kind">%s</span></h3>' % (html.escape(e.name), e.kind))
                o.append('<pre class="decl">%s</pre>' % linkify(e.decl, targets, page, e.name))
                if e.doc:
                    o.append('<pre class="doc">%s</pre>' % linkify(e.doc, targets, page))
                if e.shared:
                    o.append('<p class="shared">The comment above it in %s (also above '
                             '<a href="#%s">%s</a>):</p>' % (hdr.name, e.shared_from, e.shared_from))
                    o.append('<pre class="doc">%s</pre>' % linkify(e.shared, targets, page))
                if not e.doc and not e.shared:
                    o.append('<p>Described in <a href="#%s">%s</a> above.</p>'
                             % (sec.anchor, html.escape(sec.title)))
                o.append("</div>")
            o.append("</section>")
        o.append("</body></html>\n")
        with open(os.path.join(outdir, page), "w", encoding="utf-8") as f:
            f.write("\n".join(o))

    o = ['<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
         "<title>redlock-c API reference</title>",
         '<link rel="stylesheet" href="style.css"></head><body>',
         "<h1>redlock-c API reference</h1>",
         "<p>Made by scripts/docs.sh from the comments of the public headers, which are the "
         "contract. docs/api.md explains the API as a whole.</p>"]
    for hdr in headers:
        page = page_name(hdr)
        first = hdr.overview.split("\n\n")[0]
        o.append('<h2 id="hdr-%s"><a href="%s">%s</a></h2>' % (page[:-5], page, html.escape(hdr.name)))
        o.append('<pre class="doc">%s</pre>' % html.escape(first))
        o.append('<ul class="sections">')
        for sec in hdr.sections:
            names = ", ".join('<a href="%s#%s">%s</a>' % (page, e.name, html.escape(e.name))
                              for e in sec.entries if e.kind in ("function", "type", "error"))
            o.append('<li><a href="%s#%s">%s</a>%s</li>' % (page, sec.anchor, html.escape(sec.title),
                                                          (": " + names) if names else ""))
        o.append("</ul>")
    o.append('<h2 id="all">Index</h2>')
    for kind, title in KIND_TITLES:
        es = sorted((e for hdr in headers for sec in hdr.sections for e in sec.entries
                     if e.kind == kind), key=lambda e: e.name)
        o.append('<h3 id="all-%s">%s (%d)</h3><ul class="index %s">' % (kind, title, len(es), kind))
        for e in es:
            o.append('<li><a class="entry-link" href="%s#%s">%s</a> <span class="kind">%s</span></li>'
                     % (page_name(e.header), e.name, html.escape(e.name), e.header.name))
        o.append("</ul>")
    o.append("</body></html>\n")
    with open(os.path.join(outdir, "index.html"), "w", encoding="utf-8") as f:
        f.write("\n".join(o))
    with open(os.path.join(outdir, "style.css"), "w", encoding="utf-8") as f:
        f.write(CSS.lstrip())


# ---- man 3 --------------------------------------------------------------------------


def roff_escape(line):
    line = line.replace("\\", "\\e")
    if line.startswith((".", "'")):
        line = "\\&" + line
    return line


def roff_text(text):
    """Comment text as roff, laid out as in the header (no filling): the
    comments align lists, tables of calls and examples by hand."""
    out = [".nf"]
    for line in text.split("\n"):
        out.append(roff_escape(line) if line.strip() else "")
    out.append(".fi")
    return "\n".join(out)


def summary(e):
    """The NAME line's description: the comment's first sentence, short."""
    if not e.doc:
        return e.section.title
    text = " ".join(e.doc.split())
    # The first sentence: up to a full stop outside parentheses.
    depth, end = 0, len(text)
    for k, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if c == "." and depth == 0 and (k + 1 == len(text) or text[k + 1] == " "):
            end = k
            break
    first = text[:end]
    if len(first) > 70:
        first = first[:67].rsplit(" ", 1)[0] + " ..."
    return first or e.section.title


def man_header(name, version):
    # .nh .ad l: long identifiers are neither hyphenated nor stretched apart.
    return '.TH "%s" 3 "" "redlock-c %s" "redlock-c API"\n.nh\n.ad l' % (name.upper(), version)


def write_man(headers, mandir, version):
    d = os.path.join(mandir, "man3")
    os.makedirs(d, exist_ok=True)
    for name in os.listdir(d):
        if name.endswith(".3"):
            os.remove(os.path.join(d, name))
    for hdr in headers:
        for sec in hdr.sections:
            funcs = [e for e in sec.entries if e.kind == "function"]
            for e in funcs:
                o = [man_header(e.name, version), ".SH NAME",
                     "%s \\- %s" % (e.name, roff_escape(summary(e))),
                     ".SH SYNOPSIS", ".nf", ".B #include <%s>" % hdr.name, ".PP"]
                o.extend(roff_escape(l) for l in e.decl.split("\n"))
                o.append(".fi")
                o.append(".SH DESCRIPTION")
                if e.doc or e.shared:
                    if e.doc:
                        o.append(roff_text(e.doc))
                    if e.shared:
                        if e.doc:
                            o.append(".PP")
                        o.append("The comment above it in %s (also above %s):" % (hdr.name, e.shared_from))
                        o.append(".PP")
                        o.append(roff_text(e.shared))
                    if sec.intro:
                        o.append(".PP")
                        o.append("From the section \\(lq%s\\(rq of %s:" % (roff_escape(sec.title), hdr.name))
                        o.append(".PP")
                        o.append(roff_text(sec.intro))
                elif sec.intro:
                    o.append(roff_text(sec.intro))
                else:
                    o.append("See %s, section \\(lq%s\\(rq." % (hdr.name, roff_escape(sec.title)))
                o.append(".SH SEE ALSO")
                others = [f.name for f in funcs if f is not e][:12]
                o.append(",\n".join(".BR %s (3)" % x for x in ["redlock"] + others))
                with open(os.path.join(d, e.name + ".3"), "w", encoding="utf-8") as f:
                    f.write("\n".join(o) + "\n")
    # redlock(3): the overview, every section with its functions, the error codes.
    o = [man_header("redlock", version), ".SH NAME",
         "redlock \\- Redlock distributed locks over N Redis masters (C API)", ".SH SYNOPSIS", ".nf"]
    for hdr in headers:
        o.append(".B #include <%s>" % hdr.name)
    o.append(".fi")
    o.append(".PP")
    o.append("Link with \\fIpkg-config --libs redlock\\fP.")
    for hdr in headers:
        o.append(".SH %s" % hdr.name.upper().replace(".", "\\&."))
        o.append(roff_text(hdr.overview))
        for sec in hdr.sections:
            funcs = [e for e in sec.entries if e.kind == "function"]
            if not funcs:
                continue
            o.append(".SS %s" % roff_escape(sec.title))
            for e in funcs:
                o.append(".TP")
                o.append(".BR %s (3)" % e.name)
                o.append(roff_escape(summary(e)))
    o.append(".SH ERRORS")
    o.append("Calls that can fail return 0 (REDLOCK_OK) or one of these codes:")
    for hdr in headers:
        for sec in hdr.sections:
            for e in sec.entries:
                if e.kind == "error":
                    o.append(".TP")
                    o.append(".B %s" % e.decl.replace("= ", "(").replace(" (", " (") + ")")
                    o.append(roff_escape(e.doc.split("\n")[0]))
    o.append(".SH SEE ALSO")
    o.append("The HTML reference (scripts/docs.sh), and docs/api.md of redlock-c.")
    with open(os.path.join(d, "redlock.3"), "w", encoding="utf-8") as f:
        f.write("\n".join(o) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--html", required=True, help="directory for index.html and the pages")
    ap.add_argument("--man", help="directory for man3/*.3")
    ap.add_argument("--version", default="", help="the library's version, for the man pages")
    ap.add_argument("headers", nargs="+")
    a = ap.parse_args()
    headers = [read_header(p) for p in a.headers]
    names = {}
    for hdr in headers:
        for sec in hdr.sections:
            for e in sec.entries:
                if e.name in names and e.kind != "constant":
                    sys.exit("%s: %s is declared twice (also in %s)" % (hdr.name, e.name, names[e.name]))
                names[e.name] = hdr.name
    write_html(headers, a.html)
    if a.man:
        write_man(headers, a.man, a.version)
    counts = {}
    for hdr in headers:
        for sec in hdr.sections:
            for e in sec.entries:
                counts[e.kind] = counts.get(e.kind, 0) + 1
    print("apiref: %s: %s" % (", ".join(h.name for h in headers),
                              ", ".join("%d %ss" % (counts.get(k, 0), k) for k, _ in KIND_TITLES)))


if __name__ == "__main__":
    main()
