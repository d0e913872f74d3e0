"""Each setting has one owner: no settings class redefines a field of another.

A field declared twice (as ``internal_token`` once was, in the common and the
library settings) can drift apart: two defaults, two meanings for one
environment variable.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from pydantic_settings import BaseSettings

import services


def _settings_classes() -> list[type[BaseSettings]]:
    for info in pkgutil.walk_packages(services.__path__, "services."):
        if info.name.endswith("settings"):
            importlib.import_module(info.name)
    found: list[type[BaseSettings]] = []
    todo: list[type[BaseSettings]] = [BaseSettings]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("services.") and sub not in found:
                found.append(sub)
                todo.append(sub)
    return found


def test_no_setting_is_defined_twice() -> None:
    owners: dict[str, list[str]] = {}
    for cls in _settings_classes():
        for name in inspect.get_annotations(cls):
            owners.setdefault(name, []).append(f"{cls.__module__}.{cls.__qualname__}")
    twice = {name: where for name, where in owners.items() if len(where) > 1}
    assert not twice, f"settings defined in more than one class: {twice}"


def test_common_settings_hold_only_shared_fields() -> None:
    from services.common.settings import CommonSettings

    shared = {
        "env", "home", "database_url", "redis_url", "workspace_root", "log_level",
        "task_soft_time_limit_s", "task_hard_time_limit_s", "broker_visibility_timeout_s",
        "library_url", "internal_token",
        "context_limit_tokens",  # the worker budgets by it, the chat page shows it
        "skills_dir",  # the worker loads the skills, the chat page lists them
        # The sandbox enforces the disk caps, the API shows usage against them.
        "sandbox_workspace_max_mb", "sandbox_user_disk_max_mb",
        # The worker sends execs there, the API a deleted session's workspace removal.
        "sandbox_queue",
    }  # fmt: skip
    assert set(CommonSettings.model_fields) == shared
