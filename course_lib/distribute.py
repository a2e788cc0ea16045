"""Distribution on one machine: virtual CPU devices stand in for GPUs, local processes for machines.

Three ideas, each with the code that shows it:

* Model parallelism (``chain``, ``towers``, ``traffic``): a model's layers placed on
  different devices. A dense chain hands every activation across each device boundary
  and its devices wait on each other in turn; independent towers cross only where
  they join, and can run at the same time. Between CPU devices of one process a
  crossing hands over the buffer (no bytes are copied); between GPUs it is a copy.
* Data parallelism (``make_strategy``, ``fit``, ``custom_loop``, ``make_train_step``):
  every replica holds the whole model, takes a slice of each global batch, and the
  gradients are summed before one shared update; global batch = per-replica batch x
  replicas. Mirrored, CentralStorage and OneDevice strategies train the same model to
  the same loss.
* Several processes (``launch``): ``launch("module:function", n_workers=2)`` starts
  workers on 127.0.0.1 with ``TF_CONFIG`` and free ports, runs the function in each,
  and returns what each returned (through ``course_lib.processes``, which always cleans
  up its processes); it is general, the GA engine uses it too. ``multi_worker_train``
  is the MultiWorkerMirroredStrategy demo.

Virtual devices come from ``course_lib.devices.virtual_cpus``, which must run before
any other TensorFlow code.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import tensorflow as tf

from course_lib import bench, host, processes
from course_lib.arguments import short_device_name, whole

__all__ = [
    "chain", "towers", "traffic", "model_parallel_variants", "model_parallel_verdicts",
    "STRATEGIES", "make_strategy", "replicas", "variable_placement", "regression_data", "make_model",
    "TrainResult", "fit", "custom_loop", "make_train_step", "batch_size_study", "strategy_steps",
    "strategy_variants", "strategy_widget",
    "WorkerError", "WorkerTimeout", "free_ports", "tf_config", "worker_context", "launch",
    "multi_worker_train",
]


# ---------------------------------------------------------------------------------------
# Model parallelism
# ---------------------------------------------------------------------------------------

class PlacedMLP(tf.Module):
    """Dense ReLU layers, each pinned to a device, as ``(device, layer widths)`` segments.

    ``chain`` and ``towers`` build the two shapes the lecture compares.
    """

    def __init__(self, segments: Sequence[tuple[str, Sequence[int]]], *, join: str | None = None,
                 join_width: int | None = None, seed: int = 0, name: str = "mlp"):
        super().__init__(name=name)
        rng = np.random.default_rng(seed)
        self.parallel = join is not None
        self.segments = []
        for device, widths in segments:
            layers = []
            with tf.device(device):
                for n_in, n_out in zip(widths[:-1], widths[1:]):
                    w = tf.Variable(rng.normal(0, n_in ** -0.5, (n_in, n_out)).astype(np.float32))
                    layers.append((w, tf.Variable(tf.zeros([n_out]))))
            self.segments.append((device, layers))
        self.join = None
        if join is not None:
            n_in = sum(widths[-1] for _, widths in segments)
            with tf.device(join):
                w = tf.Variable(rng.normal(0, n_in ** -0.5, (n_in, join_width)).astype(np.float32))
            self.join = (join, w)
        # A tf.function over a plain bound method rather than a decorated method: TensorFlow's
        # method binding (a weak self behind a stand-in object) once handed the stand-in to the
        # body as ``self`` under load; a bound method has nothing to get wrong.
        self.forward = tf.function(self._forward)

    @staticmethod
    def _run(device, layers, x):
        with tf.device(device):
            for w, b in layers:
                x = tf.nn.relu(x @ w + b)
        return x

    def __call__(self, x):
        return self.forward(x)

    def _forward(self, x):
        if not self.parallel:  # one segment after another: a chain
            for device, layers in self.segments:
                x = self._run(device, layers, x)
            return x
        outputs = [self._run(device, layers, x) for device, layers in self.segments]  # side by side
        device, w = self.join
        with tf.device(device):
            return tf.concat(outputs, axis=1) @ w


def _check_devices(devices: Sequence[str]) -> list[str]:
    devices = list(devices)
    if not devices:
        raise ValueError("no devices given; use course_lib.devices.virtual_cpus(n) to get some")
    return devices


def chain(devices: Sequence[str], *, width: int = 256, depth: int = 8, features: int = 256,
          seed: int = 0) -> PlacedMLP:
    """A dense sequential MLP whose ``depth`` layers are cut into contiguous groups, one per device.

    Each layer needs the whole output of the layer before it, so at every cut the full
    activation crosses devices and the next device can start only when it arrives.
    """
    devices = _check_devices(devices)
    if depth < len(devices):
        raise ValueError(f"depth {depth} is smaller than the {len(devices)} devices: each device needs a layer")
    widths = [features] + [width] * depth
    cuts = np.linspace(0, depth, len(devices) + 1).round().astype(int)
    segments = [(d, widths[a:b + 1]) for d, a, b in zip(devices, cuts[:-1], cuts[1:])]
    return PlacedMLP(segments, seed=seed, name="chain")


def towers(devices: Sequence[str], *, width: int = 256, depth: int = 8, features: int = 256,
           seed: int = 0) -> PlacedMLP:
    """A partially connected MLP: one independent tower per device, joined by a last layer.

    The ``width`` is shared out between the towers (a vertical split), so it has as many
    units per layer as ``chain``. Only the input (sent to each tower) and the towers'
    outputs (gathered for the join) cross devices.
    """
    devices = _check_devices(devices)
    if width % len(devices):
        raise ValueError(f"width {width} does not split evenly into {len(devices)} towers; use a multiple")
    tower = [features] + [width // len(devices)] * depth
    return PlacedMLP([(d, tower) for d in devices], join=devices[0], join_width=width, seed=seed, name="towers")


def traffic(model: PlacedMLP, batch: int) -> list[dict]:
    """The tensors that cross a device boundary in one forward pass, read from the traced graph.

    An edge counts when the op producing a tensor and an op consuming it are pinned to
    different devices; a tensor is listed once per device that receives it. ``bytes`` is
    the tensor's size; ``copied`` what crossing costs in copies: nothing between two CPU
    devices of one process, which share the host's memory and hand over the buffer
    (``devices.shares_buffer``), the whole tensor where either side is a GPU.
    """
    features = model.segments[0][1][0][0].shape[0]
    graph = model.forward.get_concrete_function(tf.TensorSpec([batch, features], tf.float32)).graph
    seen, rows = set(), []
    for op in graph.get_operations():
        for tensor in op.inputs:
            src, dst = tensor.op.device, op.device
            key = (tensor.name, dst)
            if src and dst and src != dst and key not in seen and tensor.dtype != tf.resource:
                seen.add(key)
                shape = tensor.shape.as_list()
                size = int(np.prod(shape)) * tensor.dtype.size
                rows.append({"from": short_device_name(src), "to": short_device_name(dst), "shape": shape,
                             "bytes": size, "copied": 0 if _on_cpu(src) and _on_cpu(dst) else size})
    # The graph's input has no device; it reaches every device that first uses it.
    inputs = {t.name for t in graph.inputs[:1]}
    for op in graph.get_operations():
        for tensor in op.inputs:
            if tensor.name in inputs and op.device and (tensor.name, op.device) not in seen:
                seen.add((tensor.name, op.device))
                shape = tensor.shape.as_list()
                size = int(np.prod(shape)) * tensor.dtype.size
                rows.append({"from": "input", "to": short_device_name(op.device), "shape": shape, "bytes": size,
                             "copied": 0 if _on_cpu(op.device) else size})
    return rows


def _on_cpu(device: str) -> bool:
    return tf.DeviceSpec.from_string(device).device_type == "CPU"


def model_parallel_variants(devices: Sequence[str], *, width: int = 256, depth: int = 8,
                            features: int = 256) -> dict:
    """Builders for ``SpeedupWidget``: the chain and the towers, each on one device and split,
    and one tower alone (the unit that says how many towers ran at a time).

    Each builder takes ``batch`` and returns a forward pass to time.
    """
    devices = _check_devices(devices)
    one, n = devices[:1], len(devices)

    def builder(shape, devs, width=width):
        def build(batch: int):
            model = shape(devs, width=width, depth=depth, features=features)
            x = tf.random.stateless_normal([batch, features], seed=(0, 0))
            return lambda: model(x)
        return build

    return {"chain, one device": builder(chain, one), f"chain, {n} devices": builder(chain, devices),
            "towers, one device": builder(towers, one * n), f"towers, {n} devices": builder(towers, devices),
            "one tower alone": builder(towers, one, width // n)}


def model_parallel_verdicts(comparison: bench.Comparison, n_devices: int) -> bench.Verdicts:
    """What splitting did, read from a ``model_parallel_variants`` measurement.

    Besides each split against its own shape on one device, it compares the towers with one
    tower alone: ``n_devices`` towers one after another take ``n_devices`` times as long, so
    that time divided by the measured one is about how many towers ran at a time.
    """
    chain_n, towers_n = f"chain, {n_devices} devices", f"towers, {n_devices} devices"
    for name in (chain_n, towers_n, "chain, one device", "towers, one device", "one tower alone"):
        comparison[name]  # a clear KeyError naming what is missing
    one = comparison["one tower alone"].median_s
    at_once = {name: n_devices * one / comparison[name].median_s for name in ("towers, one device", towers_n)}
    cores = host.usable_cores()
    out = [comparison.verdict(chain_n, over="chain, one device"),
           comparison.verdict(towers_n, over="towers, one device"),
           f"one tower alone took {one * 1e3:.3g} ms, so {n_devices} towers one after another would take "
           f"{n_devices * one * 1e3:.3g} ms: on one device they ran about {at_once['towers, one device']:.2g} "
           f"at a time, on {n_devices} devices about {at_once[towers_n]:.2g} at a time "
           f"(cores this process may use: {cores})"]
    if max(at_once.values()) > cores:
        out.append("more towers at a time than cores means one tower's time is partly the call's fixed cost, "
                   "which the towers together pay once")
    ratio = comparison.speedup(towers_n, over="towers, one device")
    call = comparison.call(towers_n, "towers, one device")
    if call in bench.NEGLIGIBLE:
        out.append("splitting the towers changed nothing measurable here" if call == "no difference" else
                   f"splitting the towers made a difference {bench.TOO_SMALL} here")
    elif call in (bench.TOO_CLOSE, bench.TOO_FEW):
        out.append("whether splitting the towers changed anything, this run cannot say")
    elif ratio > 1:
        out.append(f"splitting let more towers run side by side ({at_once['towers, one device']:.2g} -> "
                   f"{at_once[towers_n]:.2g} at a time): each device runs its part of the function on its own")
    else:
        out.append("splitting the towers cost more in hand-overs and scheduling than it gained in concurrency")
    return bench.Verdicts(out)


# ---------------------------------------------------------------------------------------
# Data parallelism
# ---------------------------------------------------------------------------------------

STRATEGIES = ("default", "one device", "mirrored", "central storage")


def make_strategy(name: str, devices: Sequence[str] = ()) -> tf.distribute.Strategy:
    """A strategy by name over ``devices`` (logical device names).

    * "default": no distribution (what TF uses outside any scope);
    * "one device": everything on ``devices[0]``, through the strategy API;
    * "mirrored": one replica per device, variables copied to each, gradients all-reduced;
    * "central storage": one replica per device, variables kept once on ``devices[0]``.

    Mirrored uses ``ReductionToOneDevice`` to sum across CPU devices: the default for
    local devices is collective ops, whose group keys clash when a process holds two
    mirrored strategies over different device sets (as this course does). On GPUs the
    default (NCCL) is the fast choice.
    """
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}; choose one of: {', '.join(STRATEGIES)}")
    if name == "default":
        return tf.distribute.get_strategy()
    devices = _check_devices(devices)
    if name == "one device":
        return tf.distribute.OneDeviceStrategy(devices[0])
    if name == "mirrored":
        return tf.distribute.MirroredStrategy(devices, cross_device_ops=tf.distribute.ReductionToOneDevice())
    return tf.distribute.experimental.CentralStorageStrategy(compute_devices=devices, parameter_device=devices[0])


def replicas(strategy: tf.distribute.Strategy, global_batch: int) -> tuple[int, int]:
    """``(replicas, per-replica batch)`` for a global batch; it must split evenly."""
    n = strategy.num_replicas_in_sync
    if not isinstance(global_batch, (int, np.integer)) or global_batch < 1 or global_batch % n:
        raise ValueError(f"global batch {global_batch!r} does not split evenly over {n} replicas: use a "
                         f"multiple of {n} (global batch = per-replica batch x replicas)")
    return n, global_batch // n


def regression_data(n: int = 512, features: int = 8, *, noise: float = 0.1, seed: int = 0):
    """A small nonlinear regression problem ``(x, y)`` as float32 arrays."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, features)).astype(np.float32)
    w = rng.standard_normal((features, 1))
    y = np.tanh(x @ w) + 0.5 * (x[:, :1] ** 2) + noise * rng.standard_normal((n, 1))
    return x, y.astype(np.float32)


def make_model(features: int, *, hidden: int = 32, seed: int = 0):
    """The small Keras MLP every strategy trains (build it inside ``strategy.scope()``)."""
    import keras

    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((features,)), keras.layers.Dense(hidden, activation="relu"),
                             keras.layers.Dense(hidden, activation="relu"), keras.layers.Dense(1)])


def _mse(model, x, y) -> float:
    """The loss measured on all the data with the trained weights, outside any strategy."""
    return float(np.mean((np.asarray(model(x, training=False)) - y) ** 2))


@dataclass
class TrainResult:
    """What one training run did: per-epoch loss on all the data (measured here) and the
    loss the training loop itself logged."""

    strategy: str
    replicas: int
    global_batch: int
    learning_rate: float
    losses: list[float]
    logged: list[float] = field(default_factory=list)

    @property
    def per_replica_batch(self) -> int:
        return self.global_batch // self.replicas

    def row(self) -> dict:
        return {"strategy": self.strategy, "replicas": self.replicas, "per-replica batch": self.per_replica_batch,
                "global batch": self.global_batch, "final loss": self.losses[-1],
                "loss logged by the loop": self.logged[-1] if self.logged else float("nan")}


def _strategy_name(strategy) -> str:
    name = type(strategy).__name__
    return "default" if name.startswith("_Default") else name.replace("Strategy", "")


def variable_placement(strategy: tf.distribute.Strategy) -> str:
    """What a variable created in ``strategy.scope()`` becomes, and the devices holding its copies."""
    with strategy.scope():
        variable = tf.Variable(0.0)
    copies = getattr(variable, "values", None)  # a mirrored variable has one per replica
    places = [c.device for c in copies] if copies else [variable.device]
    return f"{type(variable).__name__} on {', '.join(short_device_name(p) for p in places)}"


def fit(strategy: tf.distribute.Strategy, x, y, *, global_batch: int = 64, epochs: int = 3,
        learning_rate: float = 0.05, hidden: int = 32, seed: int = 0) -> TrainResult:
    """Keras ``fit`` under ``strategy.scope()``: the model and optimizer are created in the scope,
    and Keras splits each global batch over the replicas and sums their gradients."""
    import keras

    n, _ = replicas(strategy, global_batch)
    with strategy.scope():
        model = make_model(x.shape[1], hidden=hidden, seed=seed)
        model.compile(optimizer=keras.optimizers.SGD(learning_rate), loss="mse")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch)
    losses, logged = [], []
    for _ in range(epochs):
        history = model.fit(ds, epochs=1, verbose=0, shuffle=False)
        logged.append(float(history.history["loss"][-1]))
        losses.append(_mse(model, x, y))
    return TrainResult(_strategy_name(strategy), n, global_batch, learning_rate, losses, logged)


def make_train_step(strategy: tf.distribute.Strategy, model, optimizer, global_batch: int):
    """One synchronous data-parallel step: ``strategy.run`` on each replica, then ``reduce``.

    Each replica computes its examples' losses and scales them by the GLOBAL batch
    (``compute_average_loss``), so summing the replicas' gradients gives the gradient of
    the mean loss over the whole global batch, the same as on one device.
    """
    replicas(strategy, global_batch)

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            per_example = tf.reduce_mean(tf.square(model(x, training=True) - y), axis=-1)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))  # sums over replicas
        return loss

    @tf.function
    def step(batch):
        per_replica = strategy.run(replica_step, args=batch)
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    return step


def custom_loop(strategy: tf.distribute.Strategy, x, y, *, global_batch: int = 64, epochs: int = 3,
                learning_rate: float = 0.05, hidden: int = 32, seed: int = 0) -> TrainResult:
    """The same training as ``fit``, written out: a distributed dataset and ``make_train_step``."""
    import keras

    n, _ = replicas(strategy, global_batch)
    with strategy.scope():
        model = make_model(x.shape[1], hidden=hidden, seed=seed)
        optimizer = keras.optimizers.SGD(learning_rate)
    step = make_train_step(strategy, model, optimizer, global_batch)
    ds = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch))
    losses, logged = [], []
    for _ in range(epochs):
        batch_losses = [float(step(batch)) for batch in ds]
        logged.append(float(np.mean(batch_losses)))
        losses.append(_mse(model, x, y))
    return TrainResult(_strategy_name(strategy), n, global_batch, learning_rate, losses, logged)


def batch_size_study(x, y, *, batch_sizes: Sequence[int] = (16, 64, 256), base_lr: float = 0.02,
                     epochs: int = 5, strategy: tf.distribute.Strategy | None = None) -> list[dict]:
    """Loss after ``epochs`` for each global batch, with the learning rate fixed at ``base_lr``
    and scaled with the batch (``base_lr x batch / smallest batch``, the linear scaling rule).

    A bigger global batch means fewer, less noisy updates per epoch: with the rate fixed
    the model gets less far in the same epochs; growing the rate with the batch makes up
    for part of it, as long as the rate stays small enough to be stable.
    """
    strategy = strategy or tf.distribute.get_strategy()
    rows = []
    for batch in batch_sizes:
        scaled = base_lr * batch / min(batch_sizes)
        row = {"global batch": batch, "updates": epochs * -(-len(x) // batch)}
        losses = {}
        for rule, lr in (("fixed", base_lr), ("scaled", scaled)):
            if lr not in losses:
                losses[lr] = custom_loop(strategy, x, y, global_batch=batch, epochs=epochs,
                                         learning_rate=lr).losses[-1]
            row.update({f"{rule} learning rate": lr, f"loss, {rule} rate": losses[lr]})
        rows.append(row)
    return rows


def strategy_steps(strategy: tf.distribute.Strategy, x, y, *, global_batch: int, steps: int = 5):
    """``steps`` custom-loop steps under ``strategy``: model, optimizer and batches all made by the strategy."""
    import keras

    with strategy.scope():
        model = make_model(x.shape[1])
        optimizer = keras.optimizers.SGD(0.01)
    step = make_train_step(strategy, model, optimizer, global_batch)
    data = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(global_batch)
    batches = iter(strategy.experimental_distribute_dataset(data))

    def run():
        for _ in range(steps):
            loss = step(next(batches))
        return loss
    return run


def strategy_variants(devices: Sequence[str], x, y, *, steps: int = 5) -> dict:
    """Builders for ``SpeedupWidget`` or ``bench.compare``: ``steps`` training steps of the custom
    loop under each strategy. Each builder takes ``global_batch``."""
    devices = _check_devices(devices)
    variants = {"default": ("default", devices), "one device": ("one device", devices),
                f"mirrored x{min(2, len(devices))}": ("mirrored", devices[:2]),
                f"mirrored x{len(devices)}": ("mirrored", devices),
                f"central storage x{min(2, len(devices))}": ("central storage", devices[:2])}
    strategies = {}

    def builder(label):
        def build(global_batch: int):
            if label not in strategies:  # one strategy object per variant, reused across sizes
                strategies[label] = make_strategy(*variants[label])
            return strategy_steps(strategies[label], x, y, global_batch=global_batch, steps=steps)
        return build

    return {label: builder(label) for label in variants}


def strategy_widget(devices: Sequence[str], x, y, *, global_batches: Sequence[int] = (64, 256, 1024),
                    steps: int = 5, repeats: int = 3):
    """A ``SpeedupWidget`` timing ``steps`` training steps under each strategy, global batch as the knob."""
    from course_lib.speedup_widget import SpeedupWidget

    return SpeedupWidget(strategy_variants(devices, x, y, steps=steps), sizes={"global_batch": list(global_batches)},
                         baseline="default", repeats=repeats, title=f"{steps} training steps per call, by strategy")


# ---------------------------------------------------------------------------------------
# Several processes: the multi-worker launcher
# ---------------------------------------------------------------------------------------

WorkerError = processes.ChildError  # a worker failed: ``.worker``, ``.returncode``, ``.stderr_tail``
WorkerTimeout = processes.ChildTimeout  # the workers did not all finish within the launch's timeout


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports on 127.0.0.1 that were free a moment ago (asked of the OS)."""
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def tf_config(ports: Sequence[int], index: int) -> dict:
    """The ``TF_CONFIG`` of worker ``index`` in a cluster of local workers on ``ports``."""
    return {"cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]}, "task": {"type": "worker", "index": index}}


def worker_context() -> dict:
    """Inside a launched worker: its ``index``, the number of workers, and the cluster addresses."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        raise RuntimeError("TF_CONFIG is not set: worker_context() works inside a worker started by launch()")
    config = json.loads(raw)
    workers = config["cluster"]["worker"]
    return {"index": config["task"]["index"], "n_workers": len(workers), "workers": workers}


def launch(target: str, n_workers: int = 2, *, args: Sequence = (), kwargs: Mapping | None = None,
           timeout: float = 120.0, env: Mapping[str, str] | None = None, grace: float = 3.0) -> list:
    """Run ``target(*args, **kwargs)`` in ``n_workers`` local worker processes (``processes.run_many``,
    one ``TF_CONFIG`` per worker); return their results.

    ``target`` is ``"module:function"``, importable in a fresh Python (the workers get this
    process's ``sys.path``). Worker ``i`` gets ``TF_CONFIG`` for a cluster of ``n_workers``
    workers on 127.0.0.1 with free ports, so ``tf.distribute.MultiWorkerMirroredStrategy()``
    inside the function finds its peers; ``worker_context()`` tells it its index. ``args``
    and ``kwargs`` must be JSON-able, and so must each return value. ``env`` adds environment
    variables for the workers (``TF_CPP_MIN_LOG_LEVEL`` is 2 unless set there).

    Returns the results in worker order. Raises ``WorkerError`` as soon as one worker fails
    (naming it, its exit code and its last stderr lines) and ``WorkerTimeout`` when they
    have not all finished after ``timeout`` seconds. In every case, success included, all
    worker processes (and their children) are stopped before it returns: SIGTERM, then
    SIGKILL after ``grace`` seconds.
    """
    ports = free_ports(whole("n_workers", n_workers, 1))
    each = [{"TF_CONFIG": json.dumps(tf_config(ports, i))} for i in range(int(n_workers))]
    return [w.result for w in processes.run_many(target, each, args=args, kwargs=kwargs, env=env,
                                                   timeout=timeout, grace=grace)]


def multi_worker_train(steps: int = 5, global_batch: int = 64, learning_rate: float = 0.05, seed: int = 0) -> dict:
    """Run inside ``launch``: train the small model with MultiWorkerMirroredStrategy.

    Every worker builds the same data; the strategy shards it between the workers and
    all-reduces gradients over gRPC, so all workers log the same losses and end with the
    same weights. Returns this worker's view.
    """
    import keras

    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # reads TF_CONFIG; first TF call of the worker
    context = worker_context()
    x, y = regression_data(seed=seed)
    with strategy.scope():
        model = make_model(x.shape[1], seed=seed)
        optimizer = keras.optimizers.SGD(learning_rate)
    step = make_train_step(strategy, model, optimizer, global_batch)
    options = tf.data.Options()  # every worker holds all the data: each takes every n-th batch
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    data = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(global_batch).with_options(options)
    batches = iter(strategy.experimental_distribute_dataset(data))
    losses = [float(step(next(batches))) for _ in range(steps)]
    return {"worker": context["index"], "workers": context["n_workers"],
            "replicas": strategy.num_replicas_in_sync, "losses": losses,
            "weights_checksum": float(sum(np.sum(v.numpy()) for v in model.trainable_variables))}
