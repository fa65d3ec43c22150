"""A LocalCluster for LDML's Dask tests (two in-process workers)."""

import pytest


@pytest.fixture(scope="module")
def ldml_dask_client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        yield client
