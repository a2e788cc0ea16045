"""XLA on this machine: what compiling a function does, what it costs, and when it pays (lecture 07).

One module per concern: ``hlo`` reads the HLO XLA builds before and after its passes (what fusion does)
and what a failing compilation says; ``counting`` counts, with the profiler of ``course_lib.profile``,
the XLA compilations a call causes and the kernels a plain graph runs; ``recompilation`` shows
recompilation on new shapes and how to avoid it; ``workloads`` holds the cases where XLA wins on a CPU
(a fusable elementwise chain) and where it does not (random numbers, whose two halves are workloads of
their own, and small graphs), with the readings of their comparisons; ``widget`` is the live comparison;
``machine_code`` reads the code XLA generates; ``auto_clustering`` runs auto-clustering, whose flag is
read when TensorFlow starts, in processes of its own. ``course bench xla`` lives in
``course_lib.benchmarks.xla``. Their public names are gathered here, so ``from course_lib import xla`` is
all a notebook needs.
"""

from course_lib.xla.auto_clustering import (
    AUTO_JIT_FLAGS,
    BUILDERS,
    START_UP_N,
    CountedCall,
    auto_clustered,
    auto_clustered_worker,
    jit_vs_auto,
    run_with_flags,
    turn_text,
    variant_processes,
    workload_worker,
)
from course_lib.xla.counting import (
    busy_threads,
    compilations_in,
    count_compilations,
    graph_kernels,
    measure_and_count,
)
from course_lib.xla.hlo import (
    STAGES,
    Instruction,
    compile_error,
    count_fusions,
    describe,
    fused_ops,
    hlo,
    hlo_ops,
    is_jit,
    jit,
    native_log_held,
    parse_hlo,
    unsupported_ops,
)
from course_lib.xla.machine_code import (
    ELEMENTWISE,
    LIBM,
    CompiledCode,
    code_reading,
    compiled_code,
    compiled_code_worker,
)
from course_lib.xla.recompilation import (
    BUCKETS,
    STRATEGIES,
    bucket,
    masked_chain_mean,
    pad_to_bucket,
    recompilation_table,
    recompilations,
)
from course_lib.xla.widget import speedup_widget
from course_lib.xla.workloads import (
    AUTO,
    GRAPH,
    JIT,
    SEED,
    WORKLOADS,
    box_muller,
    break_even_calls,
    cache_bytes,
    elementwise_chain,
    fusion_rows,
    jit_compiled,
    plain_graph,
    random_bits,
    random_numbers,
    rate_change_text,
    variant_threads,
    workload_args,
    workload_function,
    workload_input,
    workload_variants,
)

__all__ = [
    "AUTO", "AUTO_JIT_FLAGS", "BUCKETS", "BUILDERS", "ELEMENTWISE", "GRAPH", "JIT", "LIBM", "SEED", "STAGES",
    "START_UP_N", "STRATEGIES", "WORKLOADS", "CompiledCode", "CountedCall", "Instruction", "auto_clustered",
    "auto_clustered_worker", "box_muller", "break_even_calls", "bucket", "busy_threads", "cache_bytes",
    "code_reading", "compilations_in", "compile_error", "compiled_code", "compiled_code_worker", "count_compilations",
    "count_fusions", "describe", "elementwise_chain", "fused_ops", "fusion_rows", "graph_kernels", "hlo", "hlo_ops",
    "is_jit", "jit", "jit_compiled", "jit_vs_auto", "masked_chain_mean", "measure_and_count", "native_log_held",
    "pad_to_bucket", "parse_hlo", "plain_graph", "random_bits", "random_numbers", "rate_change_text",
    "recompilation_table", "recompilations", "run_with_flags", "speedup_widget", "turn_text", "unsupported_ops",
    "variant_processes", "variant_threads", "workload_args", "workload_function", "workload_input", "workload_variants",
    "workload_worker",
]
