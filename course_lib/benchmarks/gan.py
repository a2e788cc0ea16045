"""``course bench gan``: the GAN training step's optimisation journey of lecture 06 at any size, each
step's throughput and its ratio beside the study's (the model, the steps and the journey live in
``course_lib.models.gan``)."""

from __future__ import annotations

from course_lib.benchmarks.command import Report, command
from course_lib.models.gan import MNIST_IMAGES, SIZES, journey


@command(
    "gan", repeats=5, quick={"size": 8, "images": 2_000, "batch": 8, "big_batch": 16, "repeats": 2, "rounds": 1},
    options={
        "--size": dict(type=int, default=28, choices=SIZES, help="image size (28 is MNIST's)"),
        "--images": dict(type=int, default=MNIST_IMAGES, help="images in the dataset file the first step "
                         "reloads (MNIST has 60,000 + 10,000)"),
        "--batch": dict(type=int, default=64, help="batch of the eager and first tf.function steps"),
        "--big-batch": dict(type=int, default=256, help="batch of the later steps (the study used 2048)"),
        "--rounds": dict(type=int, default=2, help="alternating fresh processes per auto-clustering variant"),
        "--no-auto-jit": dict(action="store_true", help="skip auto-clustering (fresh processes)"),
    })
def bench_journey(args) -> Report:
    """``course bench gan``: lecture 06's journey at any size; the report adds the throughput per batch
    (``batches``) and each step's ratio beside the study's (``ratios``)."""
    steps, batches, auto, ratios = journey(size=args.size, batch=args.batch, big_batch=args.big_batch,
                                           repeats=args.repeats, auto_jit=not args.no_auto_jit,
                                           rounds=args.rounds, n_images=args.images)
    for result in (steps, batches) + ((auto,) if auto is not None else ()):
        print(result, end="\n\n")
    print(ratios.verdicts())
    return Report([steps, batches.comparison] + ([auto] if auto is not None else []),
                        {"batches": batches.rows(), "ratios": ratios.rows})
