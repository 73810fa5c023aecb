"""Threads and a signal handler emit numbered events into the same per-CPU
buffers at full speed: every event must be read back exactly once, in order
per source, or be counted as discarded; nothing may be torn."""
import collections
import unittest

from tracetest import FlatTrace, TraceDirTestCase, program, run_traced


class SignalStress(TraceDirTestCase):
    def check(self, env):
        threads, per_thread = 4, 150_000
        proc = run_traced([program("tests", "signal-stress"), str(threads), str(per_thread)], self.trace_dir, env)
        _, thread_events, signal_events = proc.stdout.split()
        thread_events, signal_events = int(thread_events), int(signal_events)
        self.assertGreater(signal_events, 0, "the timer signal never fired")
        trace = FlatTrace(self.trace_dir)
        seqs = collections.defaultdict(list)
        for e in trace.events:
            p = e["fields"]
            if e["name"] == "stress:thread":
                self.assertLess(p["source"], threads, "torn record")
                self.assertLess(p["seq"], per_thread, "torn record")
                seqs[p["source"]].append(p["seq"])
            else:
                self.assertEqual(e["name"], "stress:signal")
                self.assertLess(p["seq"], signal_events, "torn record")
                seqs["signal"].append(p["seq"])
        for source, values in seqs.items():
            if source != "signal":
                self.assertTrue(all(a < b for a, b in zip(values, values[1:])), f"thread {source} out of order")
        signal_values = seqs["signal"]
        self.assertEqual(len(signal_values), len(set(signal_values)), "a signal event was read twice")
        recorded = sum(len(v) for v in seqs.values())
        self.assertEqual(recorded + trace.discarded, thread_events + signal_events)
        return trace

    def test_large_buffers_lose_nothing(self):
        trace = self.check({"TRACERY_SUBBUF_SIZE": "4M", "TRACERY_NUM_SUBBUF": "16"})
        self.assertEqual(trace.discarded, 0)

    def test_small_buffers_count_every_loss(self):
        trace = self.check({"TRACERY_SUBBUF_SIZE": "4k", "TRACERY_NUM_SUBBUF": "2"})
        self.assertGreater(trace.discarded, 0, "4 threads into 8 KiB per CPU should overflow")


if __name__ == "__main__":
    unittest.main()
