"""Bit-packing of binary genomes: 32 genes per uint32 word.

Gene ``p`` of a (flattened) genome is bit ``p % 32`` of word ``p // 32``; padding bits
past the genome are zero and every packed op keeps them zero. Packed, a 1024-gene
genome is 32 words: crossover is three bitwise ops per word, mutation flips a few
bits, OneMax is a popcount, and a generation moves 32x less memory.
"""

from __future__ import annotations

import math

import tensorflow as tf

WORD_BITS = 32
_U32 = tf.uint32


def n_words(length: int) -> int:
    return -(-length // WORD_BITS)


def _shifts() -> tf.Tensor:
    return tf.range(WORD_BITS, dtype=tf.int32)


def bits_to_words(bits: tf.Tensor) -> tf.Tensor:
    """bool (B, L) -> uint32 (B, ceil(L/32))."""
    length = bits.shape[-1]
    pad = n_words(length) * WORD_BITS - length
    b = tf.pad(bits, [[0, 0], [0, pad]]) if pad else bits
    b = tf.reshape(b, (-1, n_words(length), WORD_BITS))
    weights = tf.bitwise.left_shift(tf.ones([WORD_BITS], _U32), tf.cast(_shifts(), _U32))
    return tf.reduce_sum(tf.where(b, weights, tf.zeros([], _U32)), axis=-1)  # distinct bits: sum == or


def words_to_bits(words: tf.Tensor, length: int) -> tf.Tensor:
    """uint32 (B, W) -> bool (B, length)."""
    shifted = tf.bitwise.right_shift(words[..., None], tf.cast(_shifts(), _U32))
    b = tf.reshape(shifted & tf.ones([], _U32), (-1, words.shape[-1] * WORD_BITS))
    return tf.not_equal(b[:, :length], 0)


def pack(genes: tf.Tensor) -> tf.Tensor:
    """0/1 genes (N, *genome) -> uint32 words (N, W)."""
    flat = tf.reshape(genes, (-1, genes.shape[1:].num_elements()))
    return bits_to_words(tf.not_equal(flat, 0))


def unpack(words: tf.Tensor, shape: tuple[int, ...], dtype: tf.DType) -> tf.Tensor:
    """uint32 words (N, W) -> 0/1 genes (N, *shape) of ``dtype``."""
    return tf.reshape(tf.cast(words_to_bits(words, math.prod(shape)), dtype), (-1, *shape))


_UNSIGNED = {tf.int8: tf.uint8, tf.int16: tf.uint16, tf.int32: tf.uint32, tf.int64: tf.uint64}


@tf.function(autograph=False, reduce_retracing=True)  # one trace for every population size
def all_binary(genes: tf.Tensor) -> tf.Tensor:
    """Whether every (integer) gene is 0 or 1.

    Read as unsigned, a negative gene is huge, so one maximum answers. A graph, not XLA:
    TensorFlow's reduction kernel splits the work over the cores, while XLA:CPU reduces to a
    scalar on one core.
    """
    return tf.reduce_max(tf.bitcast(genes, _UNSIGNED.get(genes.dtype, genes.dtype))) <= 1


def popcount(words: tf.Tensor) -> tf.Tensor:
    """Set bits per row, int32 (N,)."""
    return tf.reduce_sum(tf.cast(tf.raw_ops.PopulationCount(x=words), tf.int32), axis=-1)


def interval_words(lo: tf.Tensor, hi: tf.Tensor, words: int) -> tf.Tensor:
    """Words whose set bits are the gene positions [lo, hi) of each row; lo, hi int32 (B,)."""
    start = tf.range(words, dtype=tf.int32)[None, :] * WORD_BITS
    a = tf.clip_by_value(lo[:, None] - start, 0, WORD_BITS)
    b = tf.clip_by_value(hi[:, None] - start, 0, WORD_BITS)
    return _low_ones(b) & ~_low_ones(a)


def _low_ones(k: tf.Tensor) -> tf.Tensor:
    """Words with the low ``k`` bits set, k in [0, 32]."""
    full = tf.constant(0xFFFFFFFF, _U32)
    partial = tf.bitwise.left_shift(tf.ones([], _U32), tf.cast(tf.minimum(k, 31), _U32)) - 1
    return tf.where(k >= WORD_BITS, full, partial)
