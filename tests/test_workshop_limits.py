"""The workshop hub's limit on failed logins (scripts/jupyter/login_limits.py), on a fake clock."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "jupyter"))
import login_limits  # noqa: E402
from login_limits import FailedLogins  # noqa: E402


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_name_is_locked_after_its_failures_and_unlocked_when_they_age_out():
    clock = Clock()
    limits = FailedLogins(per_name=3, per_address=100, window_s=60, clock=clock)
    for _ in range(2):
        limits.failed("learner01", "10.0.0.5")
        clock.now += 1
    assert not limits.blocked("learner01", "10.0.0.5")
    limits.failed("learner01", "10.0.0.5")
    assert limits.blocked("learner01", "10.0.0.5")
    assert limits.blocked("learner01", "10.0.0.99")  # per name: another address does not help
    assert not limits.blocked("learner02", "10.0.0.5")  # another name from the same address is fine
    clock.now += 58.5  # the first failure (at 1000) leaves the window at 1060
    assert not limits.blocked("learner01", "10.0.0.5")


def test_an_address_is_locked_whatever_names_it_tries():
    clock = Clock()
    limits = FailedLogins(per_name=100, per_address=4, window_s=60, clock=clock)
    for i in range(4):
        limits.failed(f"learner{i:02d}", "10.0.0.7")
    assert limits.blocked("learner99", "10.0.0.7")
    assert not limits.blocked("learner99", "10.0.0.8")


def test_a_right_code_forgives_the_names_typos_but_not_the_addresss():
    limits = FailedLogins(per_name=2, per_address=3, window_s=60, clock=Clock())
    limits.failed("learner01", "10.0.0.5")
    limits.succeeded("learner01")
    limits.failed("learner01", "10.0.0.5")
    assert not limits.blocked("learner01", "10.0.0.5")
    limits.failed("learner02", "10.0.0.5")
    assert limits.blocked("learner03", "10.0.0.5")  # three failures from the address stay counted


def test_names_and_addresses_without_recent_failures_are_forgotten():
    clock = Clock()
    limits = FailedLogins(window_s=10, clock=clock)
    for i in range(1000):
        limits.failed(f"guess{i}", f"10.0.{i // 256}.{i % 256}")
    clock.now += 11
    for i in range(1000):
        assert not limits.blocked(f"guess{i}", f"10.0.{i // 256}.{i % 256}")
    assert not limits._by_name and not limits._by_address  # memory does not grow with old attempts


def test_the_defaults_and_the_codes_strength_are_what_workshop_sh_says():
    assert (login_limits.PER_NAME, login_limits.PER_ADDRESS, login_limits.WINDOW_S) == (10, 30, 600.0)
    assert login_limits.guesses_on_average() == pytest.approx(31 ** 12 / 2)
    text = (Path(__file__).resolve().parents[1] / "scripts" / "workshop.sh").read_text()
    assert 'abc = "abcdefghjkmnpqrstuvwxyz23456789"' in text and "new_secret 3" in text
    assert len("abcdefghjkmnpqrstuvwxyz23456789") == login_limits.ALPHABET
    assert "10 per name, 30 per address, in 10 minutes" in text


@pytest.mark.parametrize("kw", [{"per_name": 0}, {"per_address": 0}, {"window_s": 0}])
def test_limits_must_be_positive(kw):
    with pytest.raises(ValueError):
        FailedLogins(**kw)
