"""``course bench neuro``: networks per second and policy steps per second of a population, evaluated
as one batched (and XLA-compiled) program, with a Keras call per network, and, for whole cart-pole
episodes, with Gymnasium's vector environment and one batched policy call per step."""

from __future__ import annotations

from course_lib import bench
from course_lib.benchmarks.command import command
from course_lib.evo.neuro import mlp
from course_lib.lessons.neuroevolution import (
    GRAPH,
    GYMNASIUM,
    PER_INDIVIDUAL,
    XLA,
    digits,
    policy_steps,
    policy_variants,
    speed_variants,
)
from course_lib.problems import cartpole, control


def rates(comparison: bench.Comparison) -> dict[str, float]:
    """Work per second for each variant of a comparison made by ``bench_neuro`` (networks or steps)."""
    return {t.name: comparison.params["work"] / t.median_s for t in comparison.timings}


def _sizes_at_least_two(args) -> str | None:
    return None if all(n >= 2 for n in args.sizes) else f"population sizes must be >= 2, got {args.sizes}"


@command("neuro", repeats=3, check=_sizes_at_least_two,
               quick={"sizes": [64, 256], "episodes": 2, "steps": 100},
               options={"--sizes": {"type": int, "nargs": "+", "default": [64, 256, 1024, 4096],
                                    "help": "population sizes"},
                        "--keras-max": {"type": int, "default": 64,
                                            "help": "largest population timed with per-individual Keras calls (their "
                                                 "time grows linearly; a rate per network does not depend on the "
                                                 "population)"},
                        "--gym-max": {"type": int, "default": 1024,
                                          "help": "largest population stepped in Gymnasium's vector environment "
                                               "(one Python environment per episode)"},
                        "--episodes": {"type": int, "default": 4}, "--steps": {"type": int, "default": 500}})
def bench_neuro(args) -> list:
    """``course bench neuro``: networks/s and policy steps/s for each population size, in one run."""
    classifier, policy = mlp(64, [16], 10), mlp(4, [8], 1)
    x = digits()[0][:256]
    cart = control.Control(policy, cartpole.CartPole(), episodes=args.episodes, steps=args.steps)
    comparisons = []
    for n in args.sizes:
        chosen = [v for v in (PER_INDIVIDUAL, GRAPH, XLA) if v != PER_INDIVIDUAL or n <= args.keras_max]
        builders = speed_variants(classifier, x)
        c = bench.compare({v: builders[v](n) for v in chosen}, repeats=args.repeats, number=1,
                          title=f"{n} networks 64-16-10 on {len(x)} digits",
                          params={"population": n, "work": n, "unit": "networks/s"})
        comparisons.append(c)
        builders = policy_variants(cart, policy)
        chosen += [GYMNASIUM] if n <= args.gym_max else []
        c = bench.compare({v: builders[v](n) for v in chosen}, repeats=args.repeats, number=1,
                          title=f"{n} policies 4-8-1, {args.episodes} episodes of up to {args.steps} steps",
                          params={"population": n, "work": policy_steps(cart, policy, n), "unit": "policy steps/s"})
        comparisons.append(c)
    for c in comparisons:
        rate = ", ".join(f"{name} {value:.3g}" for name, value in rates(c).items())
        print(f"{c.title}: {c.params['unit']}: {rate}")
    return comparisons
