"""Connecting to a cluster: a bad or unreachable ray_address fails fast and clearly,
and a RayVecEnv asking for more CPUs than the cluster has fails instead of waiting."""
from __future__ import annotations

import socket
import time

import pytest
import ray

import robosim

from .conftest import start_local_ray

pytestmark = pytest.mark.slow   # every test here starts a Ray instance or Ray workers


@pytest.fixture
def no_ray():
    if ray.is_initialized():
        ray.shutdown()
    yield
    if ray.is_initialized():
        ray.shutdown()


@pytest.mark.parametrize("address, error, match", [
    ("127.0.0.1:1", ConnectionError, r"ray_address '127.0.0.1:1' is unreachable: nothing accepted a connection"),
    # a host no Ray head runs on (on some networks a proxy accepts the TCP connection;
    # then Ray itself gives up): a ConnectionError naming the address either way
    ("10.255.255.1:6379", ConnectionError, r"ray_address '10.255.255.1:6379'(: Ray could not connect| is unreachable)"),
    ("no-port-here", ValueError, r"ray_address must look like 'HEAD_IP:6379'.* got 'no-port-here'"),
])
def test_an_unreachable_or_malformed_ray_address_fails_within_the_timeout(no_ray, address, error, match):
    start = time.perf_counter()
    with pytest.raises(error, match=match):
        robosim.make_vec("PickCube-v1", num_envs=4, workers=2, ray_address=address, connect_timeout_s=1.0)
    assert time.perf_counter() - start < 60.0   # gives up, far sooner than Ray's own minutes of retries


def test_a_connected_driver_refuses_another_address_and_too_many_cpus(no_ray):
    start_local_ray()   # 2 CPUs
    with socket.socket() as other:   # something listening that is not this driver's cluster
        other.bind(("127.0.0.1", 0))
        other.listen()
        address = f"127.0.0.1:{other.getsockname()[1]}"
        with pytest.raises(ValueError, match=rf"ray_address must be the cluster this process is connected to "
                                             rf"\('.*'\), got '{address}'; call ray.shutdown\(\) first"):
            robosim.make_vec("PickCube-v1", num_envs=4, workers=2, ray_address=address)
    with pytest.raises(ValueError,
                       match=r"workers \* worker_cpus must fit the Ray cluster's free CPUs \(2 of 2\), got 3 \* 1 = 3"):
        robosim.make_vec("PickCube-v1", num_envs=4, workers=3)
