"""Training many byte models as one compiled step (attnscale.bytelm.train): runs are
functions of their seeds, training lowers the loss from ln 256, and bad settings are
refused by name."""

import math

import numpy as np
import pytest

pytest.importorskip("jax")

from attnscale.bytelm import corpus  # noqa: E402
from attnscale.bytelm.model import Config  # noqa: E402
from attnscale.bytelm.train import Members, Optim, train_members  # noqa: E402

SMALL = Config(layers=2, width=16, heads=2, context=12)


@pytest.mark.parametrize("make, name", [
    (lambda: Optim(steps=0), "steps"), (lambda: Optim(weight_decay=-1.0), "weight_decay"), (lambda: Optim(clip=0.0), "clip"),
    (lambda: Optim(warmup=1.0), "warmup"), (lambda: Members(seeds=(0, 1), rates=(0.01,), scales=(1.0, 1.0)), "rates"),
    (lambda: Members(seeds=(0,), rates=(-0.01,), scales=(1.0,)), "rates"), (lambda: Members(seeds=(0,), rates=(0.01,), scales=(0.0,)), "scales"),
    (lambda: Members(seeds=(-1,), rates=(0.01,), scales=(1.0,)), "seeds"), (lambda: Members(seeds=(True,), rates=(0.01,), scales=(1.0,)), "seeds"),
    (lambda: Optim(b1=1.5), "b1"), (lambda: Optim(b2=-0.1), "b2"), (lambda: Optim(b1=float("nan")), "b1"), (lambda: Optim(weight_decay=float("inf")), "weight_decay"),
    (lambda: train_members(SMALL, Optim(steps=10, chunk=4), Members((0,), (0.01,), (1.0,)), np.zeros(100, np.uint8)), "steps"),
    (lambda: train_members(SMALL, Optim(steps=4, chunk=4), Members((0,), (0.01,), (1.0,)), np.zeros(10, np.uint8)), "train"),
])
def test_bad_settings_are_refused_by_name(make, name):
    with pytest.raises(ValueError) as err:
        make()
    assert str(err.value).startswith(name + " ")


def test_training_is_deterministic_and_lowers_the_loss():
    train, _ = corpus.split()
    members = Members(seeds=(0, 0, 1), rates=(0.01, 0.01, 0.01), scales=(1.0, 1.0, 1.0))
    _, losses = train_members(SMALL, Optim(steps=8, batch=4, chunk=4), members, train)
    assert np.array_equal(losses[0], losses[1]) and not np.array_equal(losses[0], losses[2])
    assert losses[:, 0] == pytest.approx(math.log(256), rel=1e-6) and (losses[:, -1] < losses[:, 0]).all()
