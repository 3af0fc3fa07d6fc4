#!/usr/bin/env python3
"""bench/serving/validate.py: one row's simulated figure, plain and as a ratio of two
experiments (speculative decoding on / off), from hand-made results."""
import importlib.util
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location(
    "validate", os.path.join(HERE, "..", "bench", "serving", "validate.py"))
validate = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(validate)


def served(per_device):
    return {"served": True, "metrics": {"output_tokens_per_s_per_device": per_device}}


RESULTS = {"on": served(120.0), "off": served(80.0)}


class SimulatedTest(unittest.TestCase):
    def test_per_gpu(self):
        row = {"experiment": "on", "metric": "output_tok_s_per_gpu"}
        self.assertEqual(validate.simulated(row, RESULTS), 120.0)

    def test_per_node_is_eight_gpus(self):
        row = {"experiment": "off", "metric": "output_tok_s_per_node"}
        self.assertEqual(validate.simulated(row, RESULTS), 640.0)

    def test_speedup_divides_on_by_off(self):
        row = {"experiment": "on/off", "metric": "speedup_output_tok_s_per_gpu"}
        self.assertAlmostEqual(validate.simulated(row, RESULTS), 1.5)
        self.assertEqual(validate.FAMILY[row["metric"]], "speedup")

    def test_speedup_needs_two_experiments(self):
        row = {"experiment": "on", "metric": "speedup_output_tok_s_per_gpu"}
        with self.assertRaisesRegex(ValueError, "needs two experiments, ON/OFF, got 'on'"):
            validate.simulated(row, RESULTS)

    def test_plain_metric_refuses_two(self):
        row = {"experiment": "on/off", "metric": "output_tok_s_per_gpu"}
        with self.assertRaisesRegex(ValueError, "needs one experiment"):
            validate.simulated(row, RESULTS)

    def test_medians_and_mean_e2e(self):
        result = {"served": True, "metrics": {
            "ttft_s": {"mean": 0.5, "p50": 0.2}, "itl_s": {"mean": 0.03, "p50": 0.01},
            "tpot_s": {"mean": 0.02, "p50": 0.02}, "e2e_latency_s": {"mean": 4.0, "p50": 3.0}}}
        results = {"x": result}
        for name, want, family in [("ttft_ms_p50", 200.0, "TTFT"), ("itl_ms_p50", 10.0, "TPOT"),
                                   ("e2e_ms", 4000.0, "TPOT"), ("ttft_ms", 500.0, "TTFT"),
                                   ("itl_ms", 20.0, "TPOT")]:
            row = {"experiment": "x", "metric": name}
            self.assertAlmostEqual(validate.simulated(row, results), want, msg=name)
            self.assertEqual(validate.FAMILY[name], family)

    def test_e2e_needs_a_served_experiment(self):
        fixed = {"x": {"served": False, "run_s": 1.0}}
        with self.assertRaisesRegex(ValueError, "e2e_ms needs a served experiment"):
            validate.simulated({"experiment": "x", "metric": "e2e_ms"}, fixed)

    def test_missing_experiment_named(self):
        row = {"experiment": "on/gone", "metric": "speedup_output_tok_s_per_gpu"}
        with self.assertRaises(KeyError) as e:
            validate.simulated(row, RESULTS)
        self.assertEqual(e.exception.args[0], "gone")


class SummaryTest(unittest.TestCase):
    def test_median_and_max_per_name_sorted(self):
        rows = validate.summary({"b": [0.3, 0.1, 0.2], "a": [0.4, 0.0]})
        self.assertEqual([r[0] for r in rows], ["a", "b"])
        self.assertEqual(rows[0][1:], (2, 0.2, 0.4))
        self.assertEqual(rows[1][1], 3)
        self.assertAlmostEqual(rows[1][2], 0.2)
        self.assertAlmostEqual(rows[1][3], 0.3)


if __name__ == "__main__":
    sys.exit(unittest.main())
