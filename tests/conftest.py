"""Test-wide settings: a non-interactive plotting backend and quieter TensorFlow logs."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
