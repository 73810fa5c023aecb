#!/usr/bin/env python3
"""gen_package_docs: what Debian's policy wants in /usr/share/doc/PACKAGE/ of
each package `cpack -G DEB` makes, generated at build time:

    gen_package_docs.py --changelog debian/changelog --copyright debian/copyright.in
                        --version V --out DIR

writes into --out:
    copyright          the machine-readable (DEP-5) copyright file: --copyright
                       (Tracery's own paragraphs), then a paragraph for each
                       library whose code is compiled into the packages'
                       files (BUNDLED), its copyright and licence read from
                       the copyright file of the Debian package the build took
                       it from, with the full text of every licence named
    changelog.gz       --changelog (Debian's format; the packages are native,
                       so this is their only changelog), as `gzip -9n` makes it
    source_date_epoch  the time of the changelog's newest entry, in seconds:
                       the packages' file times (cpack reads it, see
                       cmake/tracery_package.cmake), so that a build of the
                       same sources makes the same packages

Fails, saying why, when the changelog's newest entry is not of version V (a
release's version is written in CMakeLists.txt and its changelog entry here,
and they must agree) or when a bundled library's copyright file lacks what
BUNDLED looks for.
"""

import argparse
import email.utils
import os
import re
import sys
import textwrap

from gen_docs import write, write_gzip

# Libraries compiled into the packages' files rather than linked at run time:
# (name, Debian package the build takes it from, the paragraphs of that
# package's copyright file that cover what is compiled in (their Files
# field), the files it was taken from, where it ends up).
BUNDLED = [
    ("CLI11", "libcli11-dev", ["*"], "usr/include/CLI/*",
     "header-only, compiled into tracery, traceryd and tracery-relayd (their command lines)"),
    ("nlohmann-json", "nlohmann-json3-dev",
     ["*", "include/nlohmann/detail/conversions/to_chars.hpp", "include/nlohmann/detail/output/serializer.hpp"],
     "usr/include/nlohmann/*",
     "header-only, compiled into the programs, libtracery.so.0, libtracery-ctl.so.0 and the Python module "
     "(control messages and JSON reports)"),
    ("asmjit", "libasmjit-dev", ["*"], "usr/lib/*/libasmjit.a",
     "a static library (Debian ships no shared one), linked into libtracery.so.0 and traceryd (the filter JIT and "
     "the payload writers)"),
    ("libbpf", "libbpf-dev", ["*"], "usr/include/bpf/bpf_helpers.h usr/include/bpf/bpf_helper_defs.h",
     "its bpf_helpers.h is compiled into the BPF programs that traceryd carries (src/kernel/bpf/)"),
]


def paragraphs(text):
    """A DEP-5 file's paragraphs: [{field: value}], a value's continuation
    lines kept with their leading space, fields in their order."""
    out = []
    for block in re.split(r"\n\s*\n", text.strip("\n")):
        fields = {}
        name = None
        for line in block.split("\n"):
            if line.startswith((" ", "\t")) and name:
                fields[name] += "\n" + line
            elif ":" in line:
                name, value = line.split(":", 1)
                fields[name] = value.strip()
        out.append(fields)
    return out


def render(paragraph):
    return "\n".join(f"{name}: {value}" for name, value in paragraph.items()) + "\n"


def license_names(expression):
    """The licences a License field's first line names: 'LGPL-2.1 or BSD-2-Clause' -> both."""
    return [n.strip() for n in re.split(r"\s+(?:or|and)\s+", expression.split("\n")[0]) if n.strip()]


def bundled_paragraphs(doc_dir):
    """The Files paragraphs of BUNDLED and the standalone License paragraphs they name, by licence name."""
    files, licenses = [], {}
    for name, package, patterns, origin, where in BUNDLED:
        path = os.path.join(doc_dir, package, "copyright")
        try:
            theirs = paragraphs(open(path, encoding="utf-8").read())
        except OSError as e:
            sys.exit(f"gen_package_docs: {name}'s copyright file: {e} (is {package} installed?)")
        standalone = {p["License"].split("\n")[0].strip(): p["License"] for p in theirs
                      if "License" in p and "Files" not in p and "Format" not in p}
        holders = []
        expression = None
        for pattern in patterns:
            found = [p for p in theirs if p.get("Files", "").split() == [pattern]]
            if not found:
                sys.exit(f"gen_package_docs: {path} has no paragraph 'Files: {pattern}' for {name}: update BUNDLED")
            holders += [h.strip() for h in found[0]["Copyright"].split("\n") if h.strip()]
            if expression not in (None, found[0]["License"]):
                sys.exit(f"gen_package_docs: {path}: the files of {name} under different licences: update BUNDLED")
            expression = found[0]["License"]
        files.append({"Files": origin, "Copyright": "\n ".join(dict.fromkeys(holders)), "License": expression,
                      "Comment": textwrap.fill(f"{name}, from Debian's {package}: {where}.", 70, subsequent_indent=" ")})
        if "\n" in expression:
            continue  # the licence's text is in the Files paragraph
        for licence in license_names(expression):
            if licence not in standalone:
                sys.exit(f"gen_package_docs: {path} names licence {licence} without its text")
            if licence in licenses and licenses[licence].split() != standalone[licence].split():
                sys.exit(f"gen_package_docs: two texts of licence {licence} ({name}'s and another's)")
            licenses[licence] = standalone[licence]
    return files, licenses


def copyright_file(template, doc_dir):
    ours = paragraphs(template)
    files, licenses = bundled_paragraphs(doc_dir)
    own_licences = {p["License"].split("\n")[0].strip() for p in ours if "Files" not in p and "License" in p}
    clash = own_licences & set(licenses)
    if clash:
        sys.exit(f"gen_package_docs: licence name {', '.join(sorted(clash))} both ours and a bundled library's")
    header, rest = ours[0], ours[1:]
    own_files = [p for p in rest if "Files" in p]
    own_licence_paragraphs = [p for p in rest if "Files" not in p]
    out = [header, *own_files, *files, *own_licence_paragraphs, *({"License": text} for text in licenses.values())]
    return "\n".join(render(p) for p in out)


def changelog_epoch(changelog, version):
    """The newest entry's time (seconds), after checking that it is of VERSION."""
    first = changelog.split("\n", 1)[0]
    m = re.match(r"^(\S+) \(([^)]+)\) ", first)
    if not m:
        sys.exit(f"gen_package_docs: the changelog's first line is not an entry's: {first!r}")
    if m.group(2) != version:
        sys.exit(f"gen_package_docs: the changelog's newest entry is of version {m.group(2)}, the project's is "
                 f"{version}: add an entry for {version} to packaging/debian/changelog")
    trailer = re.search(r"^ -- .+?>  (.+)$", changelog, re.M)
    if not trailer:
        sys.exit("gen_package_docs: the changelog's newest entry has no ' -- NAME <EMAIL>  DATE' line")
    return int(email.utils.parsedate_to_datetime(trailer.group(1)).timestamp())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name in ("changelog", "copyright", "version", "out"):
        ap.add_argument(f"--{name}", required=True)
    ap.add_argument("--doc-dir", default="/usr/share/doc", help="where the bundled libraries' copyright files are")
    args = ap.parse_args()
    changelog = open(args.changelog, encoding="utf-8").read()
    epoch = changelog_epoch(changelog, args.version)
    write(f"{args.out}/copyright", copyright_file(open(args.copyright, encoding="utf-8").read(), args.doc_dir))
    write_gzip(f"{args.out}/changelog", changelog)
    write(f"{args.out}/source_date_epoch", f"{epoch}\n")


if __name__ == "__main__":
    main()
