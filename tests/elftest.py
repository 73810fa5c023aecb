"""What binutils say of an ELF file, for the tests that check the addresses,
build-ids and debug links a trace records against it: readelf -n, -l and
--string-dump, nm. A value binutils cannot give fails the test."""
import re
import subprocess


def _run(*argv):
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr}")
    return proc.stdout


def build_id(path):
    """The GNU build-id of path as a list of bytes (readelf -n)."""
    m = re.search(r"Build ID: ([0-9a-f]+)", _run("readelf", "-n", path))
    if not m:
        raise AssertionError(f"readelf shows no build-id for {path}")
    return list(bytes.fromhex(m.group(1)))


def debug_link(path):
    """The file name in path's .gnu_debuglink section, or None (readelf --string-dump)."""
    if ".gnu_debuglink" not in _run("readelf", "-S", "-W", path):
        return None
    m = re.search(r"\[\s*0\]\s+(\S+)", _run("readelf", "--string-dump=.gnu_debuglink", path))
    if not m:
        raise AssertionError(f"readelf shows no name in {path}'s .gnu_debuglink")
    return m.group(1)


def load_span(path):
    """(first PT_LOAD's virtual address, size from there to the end of the last PT_LOAD) of path (readelf -l)."""
    loads = [(int(v, 16), int(m, 16)) for v, m in
             re.findall(r"^\s*LOAD\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)",
                        _run("readelf", "-l", "-W", path), re.M)]
    if not loads:
        raise AssertionError(f"readelf shows no loadable segment in {path}")
    first = loads[0][0]
    return first, max(v + m for v, m in loads) - first


def functions(path):
    """[(start, end, name)] of path's defined functions, by address (nm -S)."""
    out = []
    for line in _run("nm", "-S", "--defined-only", path).splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "Tt":
            start = int(parts[0], 16)
            out.append((start, start + int(parts[1], 16), parts[3]))
    return sorted(out)


def function_at(funcs, offset):
    """The name of the function of funcs (functions()) holding offset, or None."""
    for start, end, name in funcs:
        if start <= offset < end:
            return name
    return None
