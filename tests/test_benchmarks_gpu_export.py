"""course_lib.benchmarks.gpu_export: the HLO written for a GPU machine, with every input the runner must pass."""

import json
import lzma

import numpy as np

from course_lib.benchmarks import gpu_export
from course_lib.lessons.evolution import onemax_model


def test_export_writes_both_programs_with_the_knobs_values_as_captured_inputs(tmp_path):
    meta = gpu_export.export_problem(str(tmp_path), "onemax", 64, 32, onemax_model)
    json.dumps(meta)  # index.json holds it
    assert (meta["n"], meta["length"], meta["generations"]) == (32, 64, gpu_export.GENERATIONS)
    for part in ("start", "run"):
        program = meta[part]
        with lzma.open(tmp_path / program["hlo_proto"]) as fh:
            assert len(fh.read()) > 0
        # a variable's handle cannot cross to the runner: its value does
        assert "resource" not in program["captured_dtypes"]
        assert len(program["captured"]) == len(program["captured_dtypes"])
    assert meta["start"]["params"] == [[[32, 64], "int32"]]
    # the mutation's rate is a knob the program reads from a variable (evo.knobs): its table is exported
    mutation_knobs, _ = onemax_model(64, "xla").fill_knobs()
    [(name, table)] = mutation_knobs.values.items()
    assert name == "mask/counts" and table.dtype == np.uint32
    held = [np.asarray(c, d) for c, d in zip(meta["run"]["captured"], meta["run"]["captured_dtypes"])]
    assert any(np.array_equal(c, table.astype(np.int32)) for c in held)  # uint32 knobs are held as int32
