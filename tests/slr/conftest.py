"""Fixtures of the SLR tests."""

import pytest


@pytest.fixture(scope="session")
def dask_client():
    """One in-process ``distributed`` cluster of 2 workers for the session
    (skipped without the ``[dask]`` extra)."""
    pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client
