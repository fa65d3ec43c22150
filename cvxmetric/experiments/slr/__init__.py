"""The SLR paper's baselines (Euclidean scores, SLR on fixed and whole
sketches): :mod:`.baselines`."""
