#!/usr/bin/env python3
"""abi_check: libtracery-ctl exports exactly the symbols of its version
script, each with the version the script gives it; the header declares
exactly those (TRACERY_CTL_API); the SONAME is libtracery-ctl.so.0.

    abi_check.py LIBRARY VERSION_SCRIPT HEADER
"""
import re
import subprocess
import sys


def script_symbols(path):
    """{symbol: version} of the script's global: lists."""
    symbols = {}
    text = re.sub(r"#.*", "", open(path).read())
    for version, body in re.findall(r"([\w.]+)\s*\{(.*?)\}", text, re.S):
        globals_part = body.split("local:")[0].split("global:")[-1]
        for name in re.findall(r"(\w+)\s*;", globals_part):
            symbols[name] = version
    return symbols


def exported_symbols(library):
    """{symbol: version} of the library's defined dynamic symbols (but the version nodes' own)."""
    out = subprocess.run(["readelf", "--dyn-syms", "--wide", library], capture_output=True, text=True,
                         check=True).stdout
    symbols = {}
    for line in out.splitlines():
        fields = line.split()
        # Num: Value Size Type Bind Vis Ndx Name
        if len(fields) < 8 or not fields[0].rstrip(":").isdigit() or fields[6] == "UND":
            continue
        if fields[3] == "OBJECT" and fields[2] == "0" and fields[6] == "ABS":
            continue  # a version node's own symbol
        name, _, version = fields[7].partition("@")
        symbols[name] = version.lstrip("@")
    return symbols


def header_symbols(path):
    """The functions the header declares with TRACERY_CTL_API."""
    return set(re.findall(r"TRACERY_CTL_API\s[^;(]*?\b(tracery_ctl_\w+)\s*\(", open(path).read()))


def soname(library):
    out = subprocess.run(["readelf", "--dynamic", library], capture_output=True, text=True, check=True).stdout
    m = re.search(r"\(SONAME\)\s+Library soname: \[(.*)\]", out)
    return m.group(1) if m else None


def main():
    library, script, header = sys.argv[1:4]
    expected = script_symbols(script)
    declared = header_symbols(header)
    found = exported_symbols(library)
    problems = []
    if not expected:
        problems.append(f"{script} lists no symbol")
    for name in sorted(set(found) - set(expected)):
        problems.append(f"exported but not in the version script: {name}")
    for name in sorted(set(expected) - set(found)):
        problems.append(f"in the version script but not exported: {name}")
    for name in sorted(declared ^ set(expected)):
        where = "the header" if name in declared else "the version script"
        problems.append(f"only {where} names {name}")
    for name in sorted(set(expected) & set(found)):
        if found[name] != expected[name]:
            problems.append(f"{name} has version '{found[name]}', the script says {expected[name]}")
    if soname(library) != "libtracery-ctl.so.0":
        problems.append(f"SONAME {soname(library)}, not libtracery-ctl.so.0")
    for p in problems:
        print(f"abi_check: {p}")
    if problems:
        return 1
    print(f"abi_check: {len(found)} symbols, all versioned as the script says")
    return 0


if __name__ == "__main__":
    sys.exit(main())
