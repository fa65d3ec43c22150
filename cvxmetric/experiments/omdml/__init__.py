"""The OMDML paper's experiments (Sec. 5): the views of a dataset
(:mod:`.views`) and the single-modal fusion baselines with their retrieval
scores (:mod:`.baselines`)."""
