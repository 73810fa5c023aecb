#!/usr/bin/env python3
"""check-deps: Tracery's components depend on each other one way only.

Scans the `#include "..."` and `#include <tracery/...>` lines of every tracked
C/C++ file (*.c *.cc *.cpp *.h *.hh *.hpp *.inc) under src/, include/, tests/,
bench/ and examples/, and checks each include against the tables below:

  - A component is the first directory under src/ (src/ringbuf/..., component
    ringbuf). Project headers are included relative to src/
    (`#include "ringbuf/ring_buffer.hpp"` names component ringbuf); a quoted
    include that exists next to the including file names that file instead.
    A component may include itself and the components RULES lists for it.
    A directory under src/ that RULES does not list is an error.
  - Inside a component with SUBCOMPONENTS (src/ust/, src/analysis/): the
    core (files directly in the component's directory, and in its
    subdirectories not listed there) may not include a sub-component
    (src/ust/local/, src/analysis/view/, ...); each sub-component may include
    the core, itself and what it lists, nothing else: the reading side's
    products (view, stats, analyze, export, sql) never include each other.
  - Public headers (include/tracery/..., written <tracery/...> or
    "tracery/..."): each may be included only by whom PUBLIC_HEADERS says. A
    public header not in that table is an error (add it). Headers under
    include/ may include each other and system headers, nothing else.
  - Test sources (*_test.c, *_test.cpp, *_benchmark.cpp, anything under a
    fuzz/ directory) follow their component's rules, may also include
    tracery/tracepoint.h(pp), and may include the test helpers of their own
    component (files named test_*, *_test_*, *_testing.*) whatever their
    sub-component.
  - tests/ and bench/ sit on top of everything: any component. examples/ show
    the public API: public headers only (OUTSIDE_SRC).

System and third-party headers (<...> other than <tracery/...>, and quoted
includes that name no project file or component) are not checked.

Some knowledge is not a header of its own, so an include rule cannot keep it
in its place: NAME_RULES lists names (patterns on the code, comments left
out) that only some paths may write: the reader's decode plans outside
src/ctf/reader/, a control message's field read or written by its JSON key
in the daemon, the command or libtracery. Each use elsewhere is reported as
    path:line: WHAT

Output: one line per forbidden include,
    path:line: COMPONENT may not include "X/..." (COMPONENT may use: ...)
then a summary; exit status 1 if anything is forbidden, else 0 with
    check-deps: N files, M includes, all edges allowed
where M counts the project includes checked (quoted and <tracery/...>).

    scripts/check-deps.py [--root DIR]    check the tree (default: this repository)
    scripts/check-deps.py --self-test     check the checker on a made-up tree
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

# component -> components it may include besides itself
RULES = {
    'base': [],
    'rseq': ['base'],
    'ringbuf': ['base', 'rseq'],
    'clock': ['base', 'rseq'],
    'event': ['base'],
    'ctf': ['base', 'event'],
    'filter': ['base', 'event'],
    'control': ['base', 'event'],
    'consumer': ['base', 'ringbuf', 'ctf', 'event', 'clock', 'control'],
    'ust': ['base', 'rseq', 'ringbuf', 'clock', 'event', 'ctf', 'filter', 'consumer', 'control'],
    'kernel': ['base', 'clock', 'event', 'ctf', 'filter', 'consumer'],
    'daemon': ['base', 'rseq', 'ringbuf', 'clock', 'event', 'ctf', 'filter', 'consumer', 'control', 'kernel'],
    'relay': ['base', 'ctf', 'event', 'control', 'analysis'],  # analysis: --clickhouse's rows (the export's code)
    'analysis': ['base', 'event', 'ctf', 'clock', 'filter'],
    'ctl': ['base', 'control', 'event'],  # the control library: the protocol's client and its C API
    'cli': ['base', 'control', 'ctl', 'analysis', 'filter', 'event'],
    'preload': [],  # LD_PRELOAD helpers: instrumented programs, the public API only
    'agents': [],  # language agents: the run-time event API only
}

# component -> {sub-component directory: other sub-components it may include}
# ('' is the core: the files directly in the component's directory, and those
# of its subdirectories not listed here). The core includes no sub-component;
# a sub-component may include the core and itself, and what it lists.
SUBCOMPONENTS = {
    'ust': {
        'local': [],
        'daemon_link': [],
        'lib': ['local', 'daemon_link'],  # the library's constructor: chooses local or daemon_link
    },
    # The reading side's rooms: read/ and output/ at the bottom, model/ over
    # read/, and the products over the three, never including each other.
    'analysis': {
        'read': [],
        'output': [],
        'model': ['read'],
        'view': ['read', 'model', 'output'],
        'stats': ['read', 'model', 'output'],
        'analyze': ['read', 'model', 'output'],
        'export': ['read', 'model', 'output'],
        'sql': ['read', 'model', 'output'],
    },
}

# Names that only some paths may write, whatever they include: (what is
# wrong, the pattern, the path prefixes where the rule applies, the prefixes
# where the names are allowed, whether the pattern reads string literals).
# Matched on each line of the code without its comments (and without the
# text of its string literals, unless the rule reads them).
NAME_RULES = [
    ("uses the reader's decode plans, which only src/ctf/reader/ knows: "
     'read fields through ctf/reader/fields.hpp',
     re.compile(r'\bOpKind\b|\breader::(?:Op|Plan|Selector)\b|\bskip_values\b|\brun_plan\b|\.ops\b|\bplans\(\)'),
     ('src/', 'tests/', 'bench/', 'examples/'), ('src/ctf/reader/',), False),
    ('names a control message field by its JSON key: a field is named once, in its '
     'message struct in src/control/ (control/messages.hpp)',
     re.compile(r'\["[a-z_]+"\]|\.at\("|\.value\("'),
     ('src/daemon/', 'src/cli/', 'src/ust/'), (), True),
]


EVERY_COMPONENT = '*'
TESTS = 'test sources'  # *_test.c(pp), *_benchmark.cpp, fuzz/ (in any component)
# public header (path under include/) -> who may include it besides the other
# headers under include/: components, EVERY_COMPONENT, TESTS, or top-level
# directories outside src/ (tests, bench, examples).
PUBLIC_HEADERS = {
    'tracery/internal/event_desc.h': [EVERY_COMPONENT, TESTS, 'tests', 'bench', 'examples'],
    'tracery/internal/entry.h': ['ust'],
    'tracery/internal/probe.h': ['ust', 'tests', 'bench'],  # tests and benchmarks list a program's events
    'tracery/tracepoint.h': ['ust', 'preload', TESTS, 'tests', 'bench', 'examples'],
    'tracery/tracepoint.hpp': ['ust', 'preload', TESTS, 'tests', 'bench', 'examples'],
    'tracery/runtime_event.h': ['ust', 'agents', TESTS, 'tests', 'bench', 'examples'],
    'tracery/ctl.h': ['ctl', TESTS, 'tests', 'examples'],
}

# top-level directory outside src/ -> components it may include (EVERY_COMPONENT: any)
OUTSIDE_SRC = {
    'tests': [EVERY_COMPONENT],
    'bench': [EVERY_COMPONENT],
    'examples': [],
}

SOURCE_EXTENSIONS = ('.c', '.cc', '.cpp', '.cxx', '.h', '.hh', '.hpp', '.hxx', '.inc')
SCANNED_DIRS = ('src', 'include', 'tests', 'bench', 'examples')

INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]')
STRING_LITERAL_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"')
TEST_SOURCE_RE = re.compile(r'(_test\.(c|cc|cpp)|_benchmark\.(cc|cpp))$')
TEST_HELPER_RE = re.compile(r'^(test_|testing[._])|_test_|_testing\.')


def is_raw_string_start(text, i):
    """Whether the quote at text[i] opens a raw string literal (R"x(...)x",
    also with a u8, u, U or L prefix)."""
    if i == 0 or text[i - 1] != 'R':
        return False
    for prefix in ('u8', 'u', 'U', 'L', ''):
        start = i - 1 - len(prefix)
        if start >= 0 and text[start:i - 1] == prefix and (start == 0 or not re.match(r'\w', text[start - 1])):
            return True
    return False


def strip_comments(text):
    """The text with comments blanked out (newlines kept, so line numbers
    hold); string and character literals are skipped over, so a "/*" inside
    one opens no comment."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif c == '"' and is_raw_string_start(text, i):
            m = re.match(r'"([^()\\\s]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(')' + m.group(1) + '"', i + m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(text[i:j])
            i = j
        elif c == '"' or c == "'":
            if c == "'":
                # a digit separator (1'000'000) opens no literal
                k = i
                while k > 0 and re.match(r"[\w.']", text[k - 1]):
                    k -= 1
                if k < i and text[k].isdigit():
                    out.append(c)
                    i += 1
                    continue
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def includes(text):
    """(line number, '<' or '"', path) of each #include line."""
    result = []
    for number, line in enumerate(strip_comments(text).split('\n'), 1):
        m = INCLUDE_RE.match(line)
        if m:
            result.append((number, m.group(1), m.group(2).strip()))
    return result


def list_files(root):
    """The tracked C/C++ files under SCANNED_DIRS, relative to root (every
    such file when root is not a git work tree)."""
    try:
        out = subprocess.run(['git', '-C', root, 'ls-files', '-z', '--', *SCANNED_DIRS],
                             capture_output=True, check=True).stdout.decode()
        files = [f for f in out.split('\0') if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for top in SCANNED_DIRS:
            for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
                dirnames.sort()
                for name in sorted(filenames):
                    files.append(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, '/'))
    return sorted(f for f in files if f.endswith(SOURCE_EXTENSIONS) and os.path.isfile(os.path.join(root, f)))


class Where:
    """What a file is, for the rules: its component, sub-component,
    top-level directory, and whether it is a test source or a test helper."""

    def __init__(self, path):
        parts = path.split('/')
        self.path = path
        self.top = parts[0]
        self.component = parts[1] if self.top == 'src' and len(parts) > 2 else None
        self.sub = ''
        if self.component in SUBCOMPONENTS and len(parts) > 3 and parts[2] in SUBCOMPONENTS[self.component]:
            self.sub = parts[2]
        name = parts[-1]
        self.test_source = bool(TEST_SOURCE_RE.search(name)) or 'fuzz' in parts[1:-1]
        self.test_helper = bool(TEST_HELPER_RE.search(name))

    def who(self):
        if self.component is None:
            return self.top + '/'
        if self.component in SUBCOMPONENTS:
            return f'{self.component}/{self.sub}' if self.sub else f'{self.component} core'
        return self.component


def resolve(root, files, including, quote, name):
    """Where an include leads: ('public', header), ('src', path under src/),
    ('local', path) for a project file outside src/ and include/, or None for
    a system or third-party header."""
    if quote == '<':
        return ('public', name) if name.startswith('tracery/') else None
    here = os.path.normpath(os.path.join(os.path.dirname(including), name)).replace(os.sep, '/')
    if here in files or os.path.isfile(os.path.join(root, here)):
        target = here
    elif name.startswith('tracery/'):
        return ('public', name)
    elif '/' in name and (name.split('/')[0] in RULES or os.path.isdir(os.path.join(root, 'src', name.split('/')[0]))):
        target = 'src/' + name
    else:
        return None  # a generated or third-party header found through the include path
    if target.startswith('include/'):
        return ('public', target[len('include/'):])
    if target.startswith('src/'):
        return ('src', target)
    return ('local', target)


class Checker:
    def __init__(self, root):
        self.root = root
        self.files = list_files(root)
        self.fileset = set(self.files)
        self.violations = []  # (path, line, message)
        self.unknown = {}  # unknown component -> files
        self.edges = 0
        self.names = 0  # uses of NAME_RULES' names where they are not allowed

    def may_use(self, w):
        """The components and public headers a file may include, for messages."""
        if w.top == 'src':
            names = list(RULES[w.component])
            if w.component in SUBCOMPONENTS:
                subs = SUBCOMPONENTS[w.component]
                own = [f'{w.component} core'] + ([f'{w.component}/{w.sub}'] if w.sub else [])
                own += [f'{w.component}/{s}' for s in subs.get(w.sub, [])]
                names = own + names
        elif w.top == 'include':
            return 'the other headers under include/, system headers'
        else:
            allowed = OUTSIDE_SRC.get(w.top, [])
            names = ['any component'] if EVERY_COMPONENT in allowed else list(allowed)
        names += [h for h in PUBLIC_HEADERS if self.public_allowed(w, h)]
        return ', '.join(names) if names else 'nothing'

    def public_allowed(self, w, header):
        if w.top == 'include':
            return True
        allowed = PUBLIC_HEADERS.get(header)
        if allowed is None:
            return False
        if w.top == 'src':
            return (EVERY_COMPONENT in allowed or w.component in allowed
                    or (TESTS in allowed and w.test_source))
        return w.top in allowed

    def component_allowed(self, w, target):
        """May file w include target (a path under src/)?"""
        parts = target.split('/')
        comp = parts[1] if len(parts) > 2 else None
        if w.top == 'include':
            return False
        if w.top != 'src':
            allowed = OUTSIDE_SRC.get(w.top, [])
            return EVERY_COMPONENT in allowed or comp in allowed
        if comp != w.component:
            return comp in RULES[w.component]
        subs = SUBCOMPONENTS.get(comp)
        if not subs:
            return True
        t = Where(target)
        if w.test_source and t.test_helper:
            return True
        if t.sub == '' or t.sub == w.sub:
            return True
        return w.sub != '' and t.sub in subs[w.sub]

    def check_file(self, path):
        w = Where(path)
        if w.top == 'src':
            if w.component is None:
                self.violations.append((path, 0, 'is not in a component: move it into src/COMPONENT/'))
                return
            if w.component not in RULES:
                self.unknown.setdefault(w.component, []).append(path)
                return
        with open(os.path.join(self.root, path), encoding='utf-8', errors='replace') as f:
            text = f.read()
        for line, quote, name in includes(text):
            target = resolve(self.root, self.fileset, path, quote, name)
            if target is None:
                continue
            self.edges += 1
            kind, where = target
            shown = f'<{name}>' if quote == '<' else f'"{name}"'
            if kind == 'public':
                if self.public_allowed(w, where):
                    continue
                if where not in PUBLIC_HEADERS:
                    self.violations.append((path, line, f'{shown} is not in the public-header table: '
                                            'add it to PUBLIC_HEADERS in scripts/check-deps.py'))
                    continue
            elif kind == 'local':
                if w.top not in ('src', 'include'):
                    continue
            elif self.component_allowed(w, where):
                continue
            who = w.who()
            self.violations.append((path, line, f'{who} may not include {shown} ({who} may use: {self.may_use(w)})'))
        self.check_names(path, text)

    def check_names(self, path, text):
        rules = [(what, pattern, in_strings) for what, pattern, applies, allowed, in_strings in NAME_RULES
                 if path.startswith(applies) and not path.startswith(allowed)]
        if not rules:
            return
        for number, line in enumerate(strip_comments(text).split('\n'), 1):
            bare = STRING_LITERAL_RE.sub('""', line)
            for what, pattern, in_strings in rules:
                if pattern.search(line if in_strings else bare):
                    self.names += 1
                    self.violations.append((path, number, what))

    def run(self):
        for path in self.files:
            self.check_file(path)
        for comp, paths in sorted(self.unknown.items()):
            files = f'{len(paths)} file' + ('s' if len(paths) != 1 else '')
            self.violations.append((f'src/{comp}/', 0, f'unknown component "{comp}" ({files}, not checked): '
                                    'add it to the rules table (RULES in scripts/check-deps.py)'))
        return self.violations


def report(checker, out=sys.stdout):
    for path, line, message in checker.violations:
        print(f'{path}:{line}: {message}' if line else f'{path}: {message}', file=out)
    if checker.violations:
        forbidden = [p for p, line, _ in checker.violations if line]
        others = len(checker.violations) - len(forbidden)
        print(f'check-deps: {len(forbidden) - checker.names} forbidden includes and {checker.names} misplaced names'
              f' in {len(set(forbidden))} files'
              + (f', {others} unknown components or misplaced files' if others else '')
              + f' ({len(checker.files)} files, {checker.edges} includes checked)', file=out)
        return 1
    print(f'check-deps: {len(checker.files)} files, {checker.edges} includes, all edges allowed', file=out)
    return 0


# ---- self-test ----

# A made-up tree: (path, text). Include lines ending in "// forbidden" must be
# reported, every other include must not.
SELF_TEST_TREE = [
    ('src/base/log.hpp', '#pragma once\n#include <cstdio>\n'),
    ('src/base/bad.hpp', '#include "rseq/rseq.hpp" // forbidden\n'),
    ('src/rseq/rseq.hpp', '#include "base/log.hpp"\n'),
    ('src/event/event.hpp', '#pragma once\n#include "base/log.hpp"\n#include <tracery/internal/event_desc.h>\n'),
    ('src/event/event.cpp',
     '#include "event/event.hpp"\n'
     '#include "clock/trace_clock.hpp" // forbidden\n'
     '/* an old include, commented out:\n'
     '#include "clock/trace_clock.hpp"\n'
     '*/\n'
     'const char *s = "/*"; long n = 1\'000\'000;\n'
     '#include "ctf/writer.hpp" // forbidden\n'),
    ('src/clock/trace_clock.hpp', '#include "rseq/rseq.hpp"\n#include "event/event.hpp" // forbidden\n'),
    ('src/ctf/writer.hpp',
     '#include "event/event.hpp"\n'
     '#include "filter/filter.hpp" // forbidden\n'
     '#include <tracery/internal/probe.h> // forbidden\n'
     '#include <tracery/tracepoint.h> // forbidden\n'
     '#include "tracery/internal/event_desc.h"\n'),
    ('src/ctf/test_stubs.hpp', '#include "ctf/writer.hpp"\n'),
    ('src/ctf/writer_test.cpp',
     '#include <tracery/tracepoint.h>\n'
     '#include "ctf/test_stubs.hpp"\n'
     '#include "consumer/consumer.hpp" // forbidden\n'),
    ('src/filter/filter.hpp', '#include "event/event.hpp"\n#include "control/wire.hpp" // forbidden\n'),
    ('src/filter/fuzz/fuzz_parse.cpp', '#include "filter/filter.hpp"\n#include "tracery/tracepoint.hpp"\n'),
    ('src/consumer/consumer.hpp', '#include "ringbuf/ring_buffer.hpp"\n#include "clock/trace_clock.hpp"\n'
     '#include "control/wire.hpp"\n#include "filter/filter.hpp" // forbidden\n'),
    ('src/ringbuf/ring_buffer.hpp', '#include "rseq/rseq.hpp"\n#include "clock/trace_clock.hpp" // forbidden\n'),
    ('src/ringbuf/ring_buffer_benchmark.cpp', '#include "ringbuf/ring_buffer.hpp"\n#include <tracery/tracepoint.h>\n'),
    ('src/control/wire.hpp', '#include "event/event.hpp"\n#include "ctf/writer.hpp" // forbidden\n'),
    ('src/ust/registry.hpp',
     '#include "consumer/consumer.hpp"\n'
     '#include <tracery/internal/entry.h>\n'
     '#include <tracery/internal/probe.h>\n'
     '#include <tracery/tracepoint.h>\n'
     '#include "daemon/daemon.hpp" // forbidden\n'),
    ('src/ust/registry.cpp',
     '#include "ust/registry.hpp"\n'
     '#include "registry.hpp"\n'
     '#include "ust/local/local_trace.hpp" // forbidden\n'
     '#include "ust/daemon_link/client.hpp" // forbidden\n'),
    ('src/ust/registry_test.cpp',
     '#include "ust/registry.hpp"\n'
     '#include "ust/local/test_trace.hpp"\n'
     '#include "ust/local/local_trace.hpp" // forbidden\n'),
    ('src/ust/local/local_trace.hpp',
     '#include "ust/registry.hpp"\n#include "ust/daemon_link/client.hpp" // forbidden\n'),
    ('src/ust/local/local_trace.cpp', '#include "ust/local/local_trace.hpp"\n#include "local_trace.hpp"\n'
     '#include "../registry.hpp"\n'),
    ('src/ust/local/test_trace.hpp', '#include "ust/local/local_trace.hpp"\n'),
    ('src/ust/daemon_link/client.hpp', '#include "ust/registry.hpp"\n#include "control/wire.hpp"\n'
     '#include "ust/local/local_trace.hpp" // forbidden\n'),
    ('src/kernel/module.cpp', '#include "consumer/consumer.hpp"\n#include "ust/registry.hpp" // forbidden\n'),
    ('src/daemon/daemon.hpp', '#include "kernel/module.hpp"\n#include "ust/registry.hpp" // forbidden\n'
     '#include <tracery/internal/entry.h> // forbidden\n'),
    ('src/relay/relay.cpp', '#include "control/wire.hpp"\n#include "ringbuf/ring_buffer.hpp" // forbidden\n'),
    ('src/analysis/stats.cpp', '#include "filter/filter.hpp"\n#include "consumer/consumer.hpp" // forbidden\n'),
    ('src/analysis/read/walk.hpp', '#include "ctf/reader/trace_reader.hpp"\n'
     '#include "analysis/model/tasks.hpp" // forbidden\n#include "analysis/view/printer.hpp" // forbidden\n'),
    ('src/analysis/model/tasks.hpp', '#include "analysis/read/walk.hpp"\n#include "analysis/output/writer.hpp" // forbidden\n'),
    ('src/analysis/view/printer.cpp',
     '#include "analysis/read/walk.hpp"\n#include "analysis/model/tasks.hpp"\n#include "analysis/output/writer.hpp"\n'
     '#include "analysis/export/json.hpp" // forbidden\n'
     'void print(const Plan &plan) { for (auto &op : plan.ops) show(op); } // forbidden\n'
     'reader::OpKind kind; // forbidden\n'
     'std::string ops = "plan.ops"; // a string names no plan\n'),
    ('src/analysis/export/json.cpp', '#include "analysis/sql/query.hpp" // forbidden\n#include "analysis/output/writer.hpp"\n'),
    ('src/ctf/reader/decoder.cpp', '#include "ctf/reader/decoder.hpp"\nreader::OpKind k = plan.ops[0].kind; skip_values(plan);\n'),
    ('src/daemon/commands.cpp', 'uint64_t size = req["subbuf_size"]; // forbidden\n'
     'bool on = req.value("overwrite", false); // forbidden\nauto d = req.at("dir"); // forbidden\n'
     'auto m = control::decode<EnableChannel>(req);\n'),
    ('src/relay/relay_writer.cpp', 'auto host = index["host"];\n'),
    ('src/cli/main.cpp', '#include "analysis/stats.hpp"\n#include "control/wire.hpp"\n'
     '#include "daemon/daemon.hpp" // forbidden\n#include <CLI/CLI.hpp>\n#include "generated_version.h"\n'),
    ('include/tracery/tracepoint.h', '#include <stdint.h>\n#include "tracery/internal/entry.h"\n'
     '#include "internal/event_desc.h"\n#include "base/log.hpp" // forbidden\n'),
    ('include/tracery/tracepoint.hpp', '#include <tracery/tracepoint.h>\n#include <span>\n'),
    ('include/tracery/internal/entry.h', '#include "event_desc.h"\n'),
    ('include/tracery/internal/event_desc.h', '#include <stdint.h>\n'),
    ('include/tracery/internal/probe.h', '#include "event_desc.h"\n'),
    ('tests/apps/app.c', '#include <tracery/tracepoint.h>\n#include <tracery/internal/entry.h> // forbidden\n'
     '#include <tracery/extra.h> // forbidden\n'),
    ('bench/clock_bench.cpp', '#include "clock/trace_clock.hpp"\n#include <tracery/tracepoint.hpp>\n'
     '#include "bench_main.h"\n'),
    ('bench/bench_main.h', '#include <stdio.h>\n'),
    ('examples/hello.c', '#include <tracery/tracepoint.h>\n#include "ringbuf/ring_buffer.hpp" // forbidden\n'),
    ('src/runtime/old.cpp', '#include "base/log.hpp"\n'),
]


def self_test():
    failures = 0
    with tempfile.TemporaryDirectory(prefix='check-deps-') as root:
        for path, text in SELF_TEST_TREE:
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), 'w') as f:
                f.write(text)
        checker = Checker(root)
        checker.run()
        expected = set()
        allowed = 0
        for path, text in SELF_TEST_TREE:
            include_lines = {line for line, _, _ in includes(text)}
            for line, code in enumerate(text.split('\n'), 1):
                if code.rstrip().endswith('// forbidden'):
                    expected.add((path, line))
                elif line in include_lines:
                    allowed += 1
        flagged = {(p, l) for p, l, _ in checker.violations if l}
        for p, l in sorted(expected - flagged):
            print(f'FAIL: {p}:{l} is forbidden but was not reported')
            failures += 1
        for p, l, m in checker.violations:
            if l and (p, l) not in expected:
                print(f'FAIL: {p}:{l} was reported but is allowed: {m}')
                failures += 1
        unknown = [(p, m) for p, l, m in checker.violations if not l]
        if len(unknown) != 1 or unknown[0][0] != 'src/runtime/' or 'unknown component "runtime"' not in unknown[0][1]:
            print(f'FAIL: expected the unknown component "runtime" alone, got: {unknown}')
            failures += 1
        for p, l, m in checker.violations:
            print(f'  reported: {p}:{l}: {m}' if l else f'  reported: {p}: {m}')
        with open(os.devnull, 'w') as devnull:
            status = report(checker, out=devnull)
        if status != 1:
            print('FAIL: the made-up tree should fail the check')
            failures += 1
        # The same tree without its forbidden includes and unknown component passes.
        for path, text in SELF_TEST_TREE:
            full = os.path.join(root, path)
            if path.startswith('src/runtime/'):
                os.remove(full)
                continue
            with open(full, 'w') as f:
                f.write('\n'.join(l for l in text.split('\n') if not l.rstrip().endswith('// forbidden')))
        clean = Checker(root)
        clean.run()
        if clean.violations:
            print(f'FAIL: the tree without its forbidden includes still fails: {clean.violations}')
            failures += 1
        else:
            with open(os.devnull, 'w') as devnull:
                if report(clean, out=devnull) != 0:
                    print('FAIL: a clean tree does not exit 0')
                    failures += 1
    if failures:
        print(f'check-deps self-test: {failures} failures')
        return 1
    print(f'check-deps self-test: {len(expected)} forbidden includes and names and the unknown component reported, '
          f'{allowed} allowed includes not; the tree without them passes')
    return 0


def main():
    parser = argparse.ArgumentParser(description='Checks the one-way dependencies between Tracery components.')
    parser.add_argument('--root', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'),
                        help='the source tree to check (default: this repository)')
    parser.add_argument('--self-test', action='store_true', help='check the checker on a made-up tree')
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    checker = Checker(os.path.abspath(args.root))
    checker.run()
    return report(checker)


if __name__ == '__main__':
    sys.exit(main())
