"""A task's traits: one record set by the decorators and read by ``traits_of``, through
``functools.wraps`` and partials, with the plain attributes users were told to set."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import pytest

from nornir_bench.core.task_traits import Needs, TaskTraits, traits_of, with_traits
from nornir_bench.tasks import (
    asend_config,
    check_params_with,
    is_read_only,
    needs,
    read_only,
    send_command,
    send_config,
)
from nornir_bench.tasks.changes.backups import abandoned_failure
from nornir_bench.tasks.changes.config_input import prepare_config


def _check(params: object) -> None: ...


def test_a_task_that_says_nothing_has_the_default_traits() -> None:
    def mine(task: Any) -> None: ...

    assert traits_of(mine) == TaskTraits()
    assert traits_of(print) == TaskTraits()  # no __dict__ to hold one


def test_the_decorators_fill_one_record_and_keep_the_function() -> None:
    def when(params: object) -> bool:
        return True

    @read_only(when=when)
    @needs(connections=["netmiko"], descriptors=3)
    @check_params_with(_check)
    async def mine(task: Any) -> None: ...

    assert mine.__name__ == "mine"
    assert traits_of(mine) == TaskTraits(
        read_only=when, needs=Needs(connections=("netmiko",), descriptors=3),
        check_params=_check,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        traits_of(mine).honours_dry_run = True  # type: ignore[misc]


def test_the_change_tasks_say_they_honour_dry_run_and_how_jobs_prepare_and_abandon_them() -> (
    None
):
    for task in (send_config, asend_config):
        traits = traits_of(task)
        assert traits.honours_dry_run
        assert traits.prepare is prepare_config
        assert traits.abandoned_failure is abandoned_failure
        assert traits.check_params is not None and traits.needs is not None
    assert not traits_of(send_command).honours_dry_run


def test_a_wrapper_made_with_functools_wraps_has_the_traits_and_its_own_changes_stay_its() -> (
    None
):
    @needs(libraries=["jinja2"])
    def inner(task: Any) -> None: ...

    @read_only
    @functools.wraps(inner)
    def outer(task: Any) -> None:
        inner(task)

    assert traits_of(outer) == TaskTraits(read_only=True, needs=Needs(("jinja2",)))
    assert traits_of(inner) == TaskTraits(needs=Needs(("jinja2",)))  # the record is not shared


def test_a_partial_has_its_functions_traits_unless_given_its_own() -> None:
    @needs(connections=["netmiko"])
    def push(task: Any, dry_run: bool = False) -> None: ...

    bound = functools.partial(push, dry_run=True)
    assert traits_of(bound) == traits_of(push)
    marked: Callable[..., Any] = read_only(bound)
    assert traits_of(marked) == TaskTraits(read_only=True, needs=Needs(connections=("netmiko",)))
    assert traits_of(push).read_only is False
    assert traits_of(functools.partial(functools.partial(send_config))) == traits_of(send_config)


def test_the_plain_attributes_users_were_told_to_set_still_count() -> None:
    def mine(task: Any) -> None: ...

    mine.supports_dry_run = True  # type: ignore[attr-defined]
    mine.read_only = True  # type: ignore[attr-defined]
    assert traits_of(mine) == TaskTraits(read_only=True, honours_dry_run=True)
    assert is_read_only(mine, {})

    def other(task: Any) -> None: ...

    other.supports_dry_run = "yes"  # type: ignore[attr-defined]  # only True says it
    assert traits_of(other) == TaskTraits()


def test_with_traits_names_an_unknown_trait_at_once() -> None:
    with pytest.raises(TypeError, match="no trait named dry_run; the traits are abandoned"):
        with_traits(dry_run=True)

    def mine(task: Any) -> None: ...

    assert with_traits(honours_dry_run=True)(mine) is mine
    assert traits_of(mine) == TaskTraits(honours_dry_run=True)
