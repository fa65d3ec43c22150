"""What the canonical data classes share."""

__all__ = ["Samples"]


class Samples:
    """Mixin of the canonical data classes that hold their samples as ``X``
    (one per row)."""

    @property
    def n_features(self):
        """The number of features ``d`` of the samples."""
        return self.X.shape[1]
