"""The one mapping from kernel names to ops, on names recorded with oneDNN on and off."""

import pytest

from course_lib import kernels, processes

# (kernel as a trace named it with TF_ENABLE_ONEDNN_OPTS=1, with =0): one training step of a small
# convolutional model and a graph matmul, profiled with TensorFlow 2.21 on an AVX-512 x86 machine.
RECORDED = [
    ("_MklMatMul", "MatMul"),
    ("_MklNativeConv2D", "Conv2D"),
    ("_MklNativeConv2DBackpropInput", "Conv2DBackpropInput"),
    ("_MklNativeConv2DBackpropFilter", "Conv2DBackpropFilter"),
    ("_MklNativeConv2DBackpropFilterWithBias", "Conv2DBackpropFilter"),
    ("_MklNativeFusedConv2D", "_FusedConv2D"),
    ("_MklNativeFusedMatMul", "_FusedMatMul"),
    ("_MklFusedMatMul", "_FusedMatMul"),
    ("_MklNativeFusedBatchNormV3", "FusedBatchNormV3"),
]
# kernels both settings name alike
SHARED = ["BiasAddGrad", "ReluGrad", "ReadVariableOp", "AssignAddVariableOp", "Conv2DBackpropFilter", "_FusedConv2D"]


@pytest.mark.parametrize("onednn, stock", RECORDED)
def test_onednn_kernels_map_to_the_op_the_stock_build_runs(onednn, stock):
    assert kernels.op_of(onednn) == stock
    assert kernels.library_of(onednn) == "oneDNN"


@pytest.mark.parametrize("name", SHARED + ["XlaLaunch", "_XlaRun", "volta_sgemm_128x64_nn", "Mkl", "_Mklx"])
def test_other_names_come_back_unchanged(name):
    assert kernels.op_of(name) == name


def test_libraries():
    assert kernels.library_of("MatMul") == "TensorFlow"
    assert kernels.library_of("_XlaRun") == kernels.library_of("XLA fusion.3") == "XLA"


def test_events_name_their_op_under_either_library():
    assert kernels.split_event("sequential/dense/MatMul:_MklMatMul") == ("sequential/dense/MatMul", "_MklMatMul")
    assert kernels.split_event("EagerLocalExecute: MatMul") is None
    assert kernels.split_event("ExecutorState::Process") is None
    for name in ("MatMul:_MklMatMul", "MatMul:MatMul", "EagerLocalExecute: MatMul", "MatMul", "x/y:_MklMatMul"):
        assert kernels.runs_op(name, "MatMul"), name
    for name in ("MatMul:_MklNativeFusedMatMul", "BatchMatMulV2:BatchMatMulV2", "ThreadpoolListener::Record"):
        assert not kernels.runs_op(name, "MatMul"), name


def test_placement_log_shows_the_op_of_a_onednn_kernel():
    from course_lib import devices

    assert devices._op_name("_MklMatMul") == devices._op_name("MatMul") == "op MatMul"


KERNEL_THREADS = """
from course_lib import graphs
variants = graphs.matmul_variants()
result = {"eager": graphs.kernel_threads(variants["eager"](n=64), "MatMul"),
          "graph": graphs.kernel_threads(variants["tf.function"](n=64), "MatMul")}
"""


@pytest.mark.parametrize("onednn", ["1", "0"])
def test_kernel_threads_find_the_graphs_matmul_with_onednn_on_and_off(onednn):
    """Lecture 01's sentence names the thread the graph's MatMul ran on; it must find one either way."""
    found = processes.run(source=KERNEL_THREADS, env={"TF_ENABLE_ONEDNN_OPTS": onednn}, timeout=300).result
    assert found["eager"] == ["the calling thread"]
    assert found["graph"] and all(found["graph"]) and "the calling thread" not in found["graph"]
