"""Round trip of every field type: tests/apps/all_types.c emits edge values in
daemonless mode; babeltrace2 must read back each value exactly, with no
warning, and its text output must show them too."""
import math
import unittest

from tracetest import Trace, TraceDirTestCase, babeltrace2_text, program, run_traced, same_float

I8, I16, I32, I64 = 2**7, 2**15, 2**31, 2**63


class RoundTrip(TraceDirTestCase):
    def setUp(self):
        super().setUp()
        run_traced([program("tests", "all-types")], self.trace_dir, {"TRACERY_CONTEXT": "vpid,vtid,procname"})
        self.trace = Trace(self.trace_dir)

    def test_integers(self):
        got = [e["payload"] for e in self.trace.named("rt:ints")]
        names = ["s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"]
        want = [
            [-I8, -I16, -I32, -I64, 0, 0, 0, 0],
            [I8 - 1, I16 - 1, I32 - 1, I64 - 1, 2**8 - 1, 2**16 - 1, 2**32 - 1, 2**64 - 1],
            [-1, -2, -3, -4, 1, 2, 3, 4],
        ]
        self.assertEqual(got, [dict(zip(names, w)) for w in want])

    def test_floats(self):
        got = [(e["payload"]["f"], e["payload"]["d"]) for e in self.trace.named("rt:floats")]
        flt_min = 1.1754943508222875e-38
        want = [(math.nan, math.nan), (math.inf, -math.inf), (-0.0, 1.7976931348623157e308),
                (1.5, -2.25), (flt_min, 2.2250738585072014e-308)]
        self.assertEqual(len(got), len(want))
        for (gf, gd), (wf, wd) in zip(got, want):
            self.assertTrue(same_float(gf, wf), (gf, wf))
            self.assertTrue(same_float(gd, wd), (gd, wd))

    def test_strings_and_bools(self):
        got = [(e["payload"]["s"], e["payload"]["flag"]) for e in self.trace.named("rt:text")]
        self.assertEqual(got, [("", 0), ("plain ascii", 1), ("héllo wörld ✓", 1), ("", 0)])

    def test_arrays_sequences_blobs(self):
        got = [e["payload"] for e in self.trace.named("rt:lists")]
        self.assertEqual(len(got), 2)
        self.assertEqual(got[0]["arr"], [-32768, 0, 32767])
        self.assertEqual(got[0]["seq"], [0, 1, 4294967295, 7])
        self.assertEqual(got[0]["bytes"], [0x00, 0xFF, 0x10, 0x7F, 0x80])
        self.assertEqual(got[1]["arr"], [-32768, 0, 32767])
        self.assertEqual(got[1]["seq"], [])
        self.assertEqual(got[1]["bytes"], [])

    def test_enumerations(self):
        got = [e["payload"] for e in self.trace.named("rt:color")]
        self.assertEqual(got[0]["c"], (0, ["red"]))
        self.assertEqual(got[0]["wide"], (1, ["green"]))
        self.assertEqual(got[1]["c"], (2, ["many"]))
        self.assertEqual(got[1]["wide"], (150, ["many"]))

    def test_hex_integers(self):
        got = [e["payload"] for e in self.trace.named("rt:hex")]
        self.assertEqual(got, [{"addr": 0x7F3A5C000B70, "flags": -2, "byte": 0},
                               {"addr": 2**64 - 1, "flags": -I32, "byte": 0xAB}])

    def test_context_fields(self):
        for e in self.trace.events:
            self.assertEqual(e["context"]["procname"], "all-types")
            self.assertGreater(e["context"]["vpid"], 0)
            self.assertEqual(e["context"]["vtid"], e["context"]["vpid"], "single-threaded program")

    def test_event_count_and_order(self):
        names = [e["name"] for e in self.trace.events]
        self.assertEqual(names, ["rt:ints"] * 3 + ["rt:floats"] * 5 + ["rt:text"] * 4 + ["rt:lists"] * 2 +
                         ["rt:color"] * 2 + ["rt:hex"] * 2)
        stamps = [e["ts"] for e in self.trace.events]
        self.assertEqual(stamps, sorted(stamps))
        self.assertEqual(self.trace.discarded, 0)

    def test_babeltrace2_text_has_no_warning(self):
        code, out, err = babeltrace2_text(self.trace_dir)
        self.assertEqual(code, 0, err)
        self.assertEqual(err, "")
        self.assertEqual(out.count("\n"), 18)
        self.assertIn('s = "h\u00e9llo w\u00f6rld \u2713"', out)
        self.assertIn("u64 = 18446744073709551615", out)
        self.assertIn("s64 = -9223372036854775808", out)
        # hex fields as babeltrace2 shows them: upper case, no padding, a negative one in its own width
        self.assertIn("{ addr = 0x7F3A5C000B70, flags = 0xFFFFFFFE, byte = 0x0 }", out)
        self.assertIn("{ addr = 0xFFFFFFFFFFFFFFFF, flags = 0x80000000, byte = 0xAB }", out)


if __name__ == "__main__":
    unittest.main()
