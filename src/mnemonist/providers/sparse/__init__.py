"""Learned sparse (SPLADE) text encoding: the model files and a NumPy forward pass."""
