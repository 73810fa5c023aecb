"""A CTF 1.8 conformance corpus for the reader: one small forged trace per
construct of the metadata language (TSDL) and per rule the specification
sets, each read by `tracery view` and by babeltrace2.

- Valid traces print byte-identical text (babeltrace2 is the oracle).
- Traces with attributes the reader does not know print the same text, and
  `tracery view` warns of each with its metadata line and offset (as
  babeltrace2 warns, and goes on).
- Invalid metadata is refused with an error naming the metadata line, the
  offset and the rule broken, and an exit status of 1 (never a signal),
  including where babeltrace2 reads it anyway (an enumeration value out of
  its integer's range).

And a trace written by barectf (python3-barectf: a C tracer generated from a
YAML description, with tests/apps/barectf_platform.c as its platform),
printed byte-identical with babeltrace2.
"""
import os
import re
import shutil
import subprocess
import tempfile
import unittest
import uuid

from ctf_forge import BitWriter
from tracetest import program

HAVE_BT2 = shutil.which("babeltrace2") is not None
APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "apps")
TRACE_UUID = uuid.UUID("2a6422d0-6cee-11e0-8c08-cb07d7b3a564")
CLOCK = 'clock { name = "c"; freq = 1000000000; offset_s = 1700000000; };'

# A trace of one stream file holding one packet without a packet context
# (so without content or packet size: the packet is the whole file); each
# event is a 32-bit id, a 64-bit timestamp and its fields.
TEMPLATE = """/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
trace { major = MAJOR; minor = MINOR; uuid = "UUID"; byte_order = le;
	packet.header := struct { uint32_t magic; uint8_t uuid[16]; }; };
PRE
CLOCK
typealias integer { size = 64; align = 8; signed = false; map = clock.c.value; } := ts_t;
stream { event.header := struct { uint32_t id; ts_t timestamp; }; STREAM };
EVENTS
"""


def u32(v):
    return lambda w: w.int(v, 32)


class Case:
    def __init__(self, events_tsdl, events, clock=CLOCK, stream="", pre="", version=(1, 8)):
        self.metadata = (TEMPLATE.replace("MAJOR", str(version[0])).replace("MINOR", str(version[1]))
                         .replace("UUID", str(TRACE_UUID)).replace("PRE", pre).replace("CLOCK", clock)
                         .replace("STREAM", stream).replace("EVENTS", events_tsdl))
        self.events = events  # (id, timestamp, fields writer)

    def write(self, path):
        os.makedirs(path)
        with open(os.path.join(path, "metadata"), "w") as f:
            f.write(self.metadata)
        w = BitWriter(False)
        w.int(0xC1FC1FC1, 32)
        w.raw(TRACE_UUID.bytes)
        for eid, ts, fields in self.events:
            w.int(eid, 32)
            w.int(ts, 64)
            fields(w)
        with open(os.path.join(path, "stream"), "wb") as f:
            f.write(w.to_bytes())

    def line_of(self, needle):
        """The metadata line (from 1) where needle first stands."""
        return self.metadata[:self.metadata.index(needle)].count("\n") + 1


def one_event(fields_tsdl, writer, name="e"):
    return Case(f'event {{ id = 0; name = "{name}"; fields := struct {{ {fields_tsdl} }}; }};', [(0, 5, writer)])


def writes(*parts):
    """A fields writer calling each (method, args...) in turn."""
    def write(w):
        for method, *args in parts:
            getattr(w, method)(*args)
    return write


VALID = {
    "negative_clock_offset_s": Case('event { id = 0; name = "e"; fields := struct { uint32_t x; }; };',
                                    [(0, 5, u32(7))],
                                    clock='clock { name = "c"; freq = 1000000000; offset_s = -10; offset = 5; };'),
    "integer_literal_forms": one_event(
        "integer { size = 0x20; align = 010; signed = 0; } a; integer { size = 32U; align = 8UL; base = 0x10; } b;"
        " integer { size = 16; align = 8; signed = true; base = 010; } c;",
        writes(("int", 1, 32), ("int", 255, 32), ("int", -9, 16))),
    "typedef_sequence_length": one_event(
        "typedef integer { size = 8; align = 8; signed = false; } len_t; len_t n; uint32_t s[n];",
        writes(("int", 2, 8), ("int", 3, 32), ("int", 4, 32))),
    "struct_declared_inside_a_struct": one_event(
        "struct inner { uint32_t a; uint8_t b; } i; struct inner j;",
        writes(("int", 1, 32), ("int", 2, 8), ("int", 3, 32), ("int", 4, 8))),
    "inner_scope_shadows_a_type": one_event(
        "typealias integer { size = 16; align = 8; signed = true; } := uint32_t; uint32_t x;",
        writes(("int", -2, 16))),
    "string_escapes": Case('event { id = 0; name = "e\\tq\\x41\\101"; fields := struct { string s; }; };',
                           [(0, 5, writes(("string", 'a"b\\c')))],
                           pre='env { note = "a\\"b\\\\c\\n"; };'),
    "enumerations": one_event(
        'enum : integer { size = 8; align = 8; signed = true; } { NEG = -3 ... -1, ZERO, "with space" = 5 } a;'
        " enum : uint8_t { LOW = 0 ... 9, HIGH = 10 ... 255 } b;",
        writes(("int", -2, 8), ("int", 200, 8))),
    "variant_tagged_by_an_enum": one_event(
        "enum : uint8_t { I, S } tag; variant <tag> { uint32_t I; string S; } v; uint8_t after;",
        writes(("int", 1, 8), ("string", "chosen"), ("int", 9, 8))),
    "floats": one_event(
        "floating_point { exp_dig = 8; mant_dig = 24; align = 32; } f; "
        "floating_point { exp_dig = 11; mant_dig = 53; align = 64; } d;",
        writes(("float", 1.5, 32, 32), ("float", -0.25, 64, 64))),
    "arrays_of_sequences": one_event(
        "uint8_t n; uint8_t m[2][n]; string names[2];",
        writes(("int", 2, 8), ("int", 1, 8), ("int", 2, 8), ("int", 3, 8), ("int", 4, 8), ("string", "x"),
               ("string", ""))),
    "bit_fields": one_event(
        "integer { size = 3; align = 1; signed = false; } a; integer { size = 5; align = 1; signed = true; } b;"
        " integer { size = 13; align = 1; signed = false; } c; uint8_t after;",
        writes(("int", 5, 3, 1), ("int", -7, 5, 1), ("int", 4000, 13, 1), ("int", 6, 8))),
    "callsite_block_skipped": Case(
        'event { id = 0; name = "e"; fields := struct { uint32_t x; }; };\n'
        'callsite { name = "e"; func = "f"; file = "f.c"; line = 3; ip = 0x1000; };', [(0, 5, u32(1))]),
    "events_before_their_stream_and_several_classes": Case(
        'event { id = 1; name = "second"; fields := struct { uint8_t y; }; };\n'
        'event { id = 0; name = "first"; fields := struct { uint32_t x; }; };',
        [(0, 5, u32(7)), (1, 9, writes(("int", 3, 8))), (0, 12, u32(8))]),
}

# name: (case, the attribute or type named in the warning)
WARNED = {
    "unknown_integer_attribute": (one_event("integer { size = 32; align = 8; foo = 2; } x;", u32(7)), "foo"),
    "unknown_float_attribute": (one_event("floating_point { exp_dig = 8; mant_dig = 24; align = 8; qq = 1; } x;",
                                          writes(("float", 2.0, 32, 8))), "qq"),
    "unknown_string_attribute": (one_event("string { encoding = UTF8; zz = 1; } x;", writes(("string", "hi"))),
                                 "zz"),
    "unknown_event_attribute": (Case('event { id = 0; name = "e"; foo = 3; fields := struct { uint32_t x; }; };',
                                     [(0, 5, u32(7))]), "foo"),
    "unknown_event_type": (Case('event { id = 0; name = "e"; extra := struct { uint32_t a; };'
                                ' fields := struct { uint32_t x; }; };', [(0, 5, u32(7))]), "extra"),
    "unknown_clock_attribute": (Case('event { id = 0; name = "e"; fields := struct { uint32_t x; }; };',
                                     [(0, 5, u32(7))],
                                     clock='clock { name = "c"; freq = 1000000000; bar = 1; };'), "bar"),
    "unknown_stream_attribute": (Case('event { id = 0; name = "e"; fields := struct { uint32_t x; }; };',
                                      [(0, 5, u32(7))], stream="baz = 3;"), "baz"),
    "type_in_env": (Case('event { id = 0; name = "e"; fields := struct { uint32_t x; }; };', [(0, 5, u32(7))],
                         pre="env { t := integer { size = 8; }; };"), "t"),
}

# name: (case, where the error points (text in the metadata), what it says)
INVALID = {
    "type_declared_twice": (
        Case('typealias integer { size = 16; align = 8; signed = false; } := uint32_t;\n'
             'event { id = 0; name = "e"; fields := struct { uint32_t x; }; };', [(0, 5, u32(7))]),
        ":= uint32_t;\nevent", "'uint32_t' is declared twice in the same scope"),
    "field_declared_twice": (one_event("uint32_t x; uint32_t x;", writes(("int", 1, 32), ("int", 2, 32))),
                             "uint32_t x; uint32_t x;", "two fields named 'x'"),
    "keyword_as_a_field_name": (one_event("uint32_t struct;", u32(7)), "uint32_t struct",
                                "'struct' is a TSDL keyword"),
    "keyword_event_as_a_field_name": (one_event("uint32_t event;", u32(7)), "uint32_t event",
                                      "'event' is a TSDL keyword"),
    "enum_value_out_of_range": (one_event("enum : uint8_t { A = 300 } x;", writes(("int", 1, 8))),
                                "enum : uint8_t",
                                "value 300 of 'A' is out of its 8-bit unsigned integer's range (0 to 255)"),
    "negative_enum_value_in_unsigned": (one_event("enum : uint8_t { A = -1 } x;", writes(("int", 1, 8))),
                                        "enum : uint8_t", "value -1 of 'A' is out of its 8-bit unsigned"),
    "major_version": (Case('event { id = 0; name = "e"; fields := struct { uint32_t x; }; };', [(0, 5, u32(7))],
                           version=(2, 8)), "trace {", "major = 2: this reader reads CTF 1.8"),
    "minor_version": (Case('event { id = 0; name = "e"; fields := struct { uint32_t x; }; };', [(0, 5, u32(7))],
                           version=(1, 7)), "trace {", "minor = 7: this reader reads CTF 1.8"),
    "integer_wider_than_64_bits": (one_event("integer { size = 128; align = 8; } big;", u32(1)), "integer { size = 128",
                                   "integer size must be 1 to 64 bits, not 128"),
    "negative_clock_offset_in_cycles": (
        Case('event { id = 0; name = "e"; fields := struct { uint32_t x; }; };', [(0, 5, u32(7))],
             clock='clock { name = "c"; freq = 1000000000; offset_s = 10; offset = -5; };'),
        "offset = -5", "expected a number for offset"),
    "two_events_with_one_id": (
        Case('event { id = 0; name = "e"; fields := struct { uint32_t x; }; };\n'
             'event { id = 0; name = "f"; fields := struct { uint32_t x; }; };', [(0, 5, u32(7))]),
        'name = "f"', "two events with id 0 in stream 0"),
    "unknown_type_name": (one_event("uint24_t x;", u32(1)), "uint24_t", "unknown type 'uint24_t'"),
    "sequence_length_not_declared": (one_event("uint32_t s[count];", u32(0)), "uint32_t s[count]", "no field 'count' before this one"),
    "string_not_closed": (Case('event { id = 0; name = "e; };', [(0, 5, u32(7))]), 'name = "e',
                          "string literal not closed"),
}


@unittest.skipUnless(HAVE_BT2, "babeltrace2 is not installed (apt-get install babeltrace2)")
class Conformance(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tracery-ctf-conformance-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def trace(self, name, case):
        path = os.path.join(self.tmp, name)
        case.write(path)
        return path

    def view(self, path):
        return subprocess.run([program("src", "cli", "tracery"), "view", path], capture_output=True, text=True,
                              timeout=60)

    def bt2(self, path):
        return subprocess.run(["babeltrace2", path], capture_output=True, text=True, timeout=60)

    def test_valid_traces_print_as_babeltrace2_prints_them(self):
        for name, case in VALID.items():
            with self.subTest(name):
                path = self.trace(name, case)
                ours, theirs = self.view(path), self.bt2(path)
                self.assertEqual(theirs.returncode, 0, theirs.stderr)
                self.assertEqual(ours.returncode, 0, ours.stderr)
                # no warning but babeltrace2's about negative times (it also logs what it skips)
                notices = "".join(line + "\n" for line in theirs.stderr.splitlines() if line.startswith("[warning]"))
                self.assertEqual(ours.stderr, notices)
                self.assertEqual(ours.stdout.count("\n"), len(case.events))
                self.assertEqual(ours.stdout, theirs.stdout)

    def test_an_empty_stream_file_holds_no_event(self):
        path = self.trace("empty_stream", VALID["floats"])
        open(os.path.join(path, "stream_empty"), "wb").close()
        ours, theirs = self.view(path), self.bt2(path)
        self.assertEqual(ours.returncode, 0, ours.stderr)
        self.assertEqual(ours.stdout, theirs.stdout)
        self.assertEqual(ours.stdout.count("\n"), 1)
        self.assertIn("stream_empty is empty", ours.stderr)  # said, where babeltrace2 says nothing

    def test_unknown_attributes_are_warned_of_and_ignored(self):
        for name, (case, attribute) in WARNED.items():
            with self.subTest(name):
                path = self.trace(name, case)
                ours, theirs = self.view(path), self.bt2(path)
                self.assertEqual(theirs.returncode, 0, theirs.stderr)
                self.assertEqual(ours.returncode, 0, ours.stderr)
                self.assertEqual(ours.stdout, theirs.stdout)
                self.assertIn(attribute, theirs.stderr)  # babeltrace2 warns of it too
                warnings = ours.stderr.splitlines()
                self.assertEqual(len(warnings), 1, ours.stderr)
                m = re.fullmatch(r"tracery: warning: (.*)/metadata: metadata line (\d+) \(offset (\d+)\): "
                                 r"unknown (attribute|type) '(\w+)' in .*, ignored", warnings[0])
                self.assertIsNotNone(m, warnings[0])
                self.assertEqual(m.group(1), path)
                self.assertEqual(m.group(5), attribute)
                offset = int(m.group(3))
                self.assertEqual(case.metadata[offset:offset + len(attribute)], attribute)
                self.assertEqual(int(m.group(2)), case.metadata[:offset].count("\n") + 1)

    def test_invalid_metadata_is_refused_with_line_offset_and_rule(self):
        for name, (case, where, rule) in INVALID.items():
            with self.subTest(name):
                path = self.trace(name, case)
                ours = self.view(path)
                self.assertEqual(ours.returncode, 1, ours.stderr)  # an error, not a crash
                self.assertEqual(ours.stdout, "")
                m = re.match(r"tracery: (.*)/metadata: metadata line (\d+) \(offset (\d+)\): (.*)", ours.stderr)
                self.assertIsNotNone(m, ours.stderr)
                self.assertEqual(m.group(1), path)
                self.assertIn(rule, m.group(4))
                line, offset = int(m.group(2)), int(m.group(3))
                self.assertEqual(line, case.metadata[:offset].count("\n") + 1)
                start = case.metadata.index(where)
                self.assertTrue(start <= offset <= start + len(where) + 40,
                                f"the error points at offset {offset}, not at {where!r} ({start})")


BARECTF_CONFIG = """--- !<tag:barectf.org,2020/3/config>
trace:
  type:
    $include: [stdint.yaml, stdreal.yaml, stdmisc.yaml]
    native-byte-order: little-endian
    clock-types:
      default:
        frequency: 1000000000
        offset: {seconds: 1700000000}
        $c-type: uint64_t
    data-stream-types:
      default:
        $is-default: true
        $default-clock-type-name: default
        event-record-types:
          request:
            payload-field-type:
              class: structure
              members:
                - id: uint32
                - ms: double
                - path: string
                - level: int8
"""


@unittest.skipUnless(HAVE_BT2, "babeltrace2 is not installed (apt-get install babeltrace2)")
class Barectf(unittest.TestCase):
    def test_a_barectf_trace_prints_as_babeltrace2_prints_it(self):
        if shutil.which("barectf") is None or shutil.which("cc") is None:
            self.skipTest("barectf or a C compiler is missing (apt-get install python3-barectf build-essential)")
        tmp = tempfile.mkdtemp(prefix="tracery-barectf-")
        self.addCleanup(shutil.rmtree, tmp, True)
        with open(os.path.join(tmp, "config.yaml"), "w") as f:
            f.write(BARECTF_CONFIG)
        trace = os.path.join(tmp, "trace")
        os.makedirs(trace)
        subprocess.run(["barectf", "generate", "--code-dir", tmp, "--headers-dir", tmp, "--metadata-dir", trace,
                        "config.yaml"], cwd=tmp, check=True, timeout=120, capture_output=True)
        writer = os.path.join(tmp, "writer")
        subprocess.run(["cc", "-O1", "-I", tmp, "-o", writer, os.path.join(APPS, "barectf_platform.c"),
                        os.path.join(tmp, "barectf.c")], check=True, timeout=120, capture_output=True)
        subprocess.run([writer, trace, "300"], check=True, timeout=60)
        self.assertGreater(os.path.getsize(os.path.join(trace, "stream")), 4 * 512)  # several packets
        ours = subprocess.run([program("src", "cli", "tracery"), "view", trace], capture_output=True, text=True,
                              timeout=60)
        self.assertEqual(ours.returncode, 0, ours.stderr)
        self.assertEqual(ours.stderr, "")
        lines = ours.stdout.splitlines()
        self.assertEqual(len(lines), 300)
        self.assertIn('request: { id = 7, ms = -1.25, path = "/srv/item/7/with \\"quotes\\" and a tab\\t.", '
                      'level = -121 }', lines[7])
        self.assertEqual(ours.stdout, subprocess.run(["babeltrace2", trace], capture_output=True, text=True,
                                                     timeout=60).stdout)


if __name__ == "__main__":
    unittest.main()
