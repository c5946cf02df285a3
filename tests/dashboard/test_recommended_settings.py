"""A task's recommended settings: a link to the train view gets them for what it leaves unset, a value the link
sets is kept, choosing another task fills in that task's, and a link elsewhere is left alone."""

from __future__ import annotations

from core.training import recommended
from dashboard.state.settings import DEFAULTS
from tests.dashboard.conftest import make_app, no_exception


def shown(at) -> dict:
    return dict(
        d_model=at.selectbox(key="d_model").value,
        n_heads=at.button_group(key="n_heads").value,
        causal=at.toggle(key="causal").value,
        seed=at.number_input(key="seed").value,
        train_layers=at.button_group(key="train_layers").value,
        train_steps=at.selectbox(key="train_steps").value,
    )


def expected(task: str) -> dict:
    r = recommended(task)
    m = r.model
    return dict(
        d_model=m.d_model,
        n_heads=m.n_heads,
        causal=m.causal,
        seed=r.seed,
        train_layers=m.n_layers,
        train_steps=r.steps,
    )


def test_a_train_link_takes_the_tasks_recommendation():
    at = make_app(view="train", task="induction").run()
    no_exception(at)
    assert shown(at) == expected("induction")
    assert expected("induction") != expected("shift")  # the check compares something that differs per task


def test_a_value_the_link_sets_is_kept():
    at = make_app(view="train", task="reverse", d_model="64").run()
    no_exception(at)
    assert shown(at) == expected("reverse") | {"d_model": 64}


def test_choosing_a_task_fills_in_its_recommendation():
    at = make_app(view="train", task="shift").run()
    at.button_group(key="task").set_value("induction").run()
    no_exception(at)
    assert shown(at) == expected("induction")


def test_a_link_elsewhere_keeps_the_defaults():
    at = make_app(view="heads", task="induction").run()
    no_exception(at)
    assert at.selectbox(key="d_model").value == DEFAULTS.config.d_model
    assert at.button_group(key="n_heads").value == DEFAULTS.config.n_heads
