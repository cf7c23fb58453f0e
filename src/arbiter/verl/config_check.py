"""Does a verl trainer config actually use arbiter? :func:`config_problems` lists why not.

verl 0.9's ``main_ppo`` reads ``reward.custom_reward_function.*`` and ``reward.reward_manager.*``
and silently ignores the <= 0.8 keys (top-level ``custom_reward_function``,
``reward_model.reward_manager``), then scores code with its own ``prime_code``. Its fully-async entry
point (``fully_async_main``, a config with ``async_training``) and verl 0.8's ``main_ppo`` migrate them
onto ``reward.*`` first (``migrate_legacy_reward_impl``): there they are honoured, and win. Works on an
OmegaConf ``DictConfig`` or plain dicts; imports nothing from verl. See ``docs/verl.md``.
"""

from __future__ import annotations

import importlib.metadata
import logging
import re
from typing import Any

log = logging.getLogger("arbiter.verl")

#: What ``custom_reward_function.path`` may be for arbiter's reward functions.
ARBITER_REWARD_PATHS = ("pkg://arbiter.verl.reward", "pkg://arbiter/verl/reward")
#: Reward managers verl 0.9's reward loop registers (``reward.reward_manager.source=register``).
VERL09_MANAGERS = ("naive", "dapo", "gdpo", "rate_limited", "remote")
#: The functions of ``arbiter.verl.reward`` such a manager can call: once per response, with
#: ``(data_source, solution_str, ground_truth, extra_info)`` (verl's default name: ``compute_score``).
PER_RESPONSE_FUNCTIONS = ("compute_score", "compute_score_async", "compute_score_float")
_warned: set[str] = set()


def _get(node: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        if node is None:
            return None
        try:
            node = node.get(key) if hasattr(node, "get") else getattr(node, key, None)
        except Exception:  # an OmegaConf missing value ("???") or an interpolation error
            return None
    return node


def names_arbiter(path: Any) -> bool:
    """True when a ``custom_reward_function.path`` (pkg:// or a file) is arbiter's reward module."""
    if not path:
        return False
    text = str(path)
    if text.startswith("pkg://"):
        return text.replace("/", ".").rstrip(".") in {p.replace("/", ".") for p in ARBITER_REWARD_PATHS}
    text = text.removeprefix("file://").replace("\\", "/")
    return text.endswith("arbiter/verl/reward.py")


def is_fully_async(config: Any) -> bool:
    """True for a config of verl's fully-async trainer (``fully_async_main`` requires ``async_training``)."""
    return _get(config, "async_training") is not None


def migrates_legacy_keys(config: Any, verl_version: str | None = None) -> bool:
    """True when verl moves the legacy reward keys onto ``reward.*`` before reading them: its fully-async
    trainer (:func:`is_fully_async`), and ``main_ppo`` before verl 0.9 (``verl_version``; default: the
    installed verl's, read from its metadata without importing it; none installed reads as 0.9)."""
    if is_fully_async(config):
        return True
    if verl_version is None:
        try:
            verl_version = importlib.metadata.version("verl")
        except importlib.metadata.PackageNotFoundError:
            return False
    release = re.match(r"(\d+)\.(\d+)", verl_version)
    return release is not None and (int(release[1]), int(release[2])) < (0, 9)


def _legacy_function_set(config: Any) -> bool:
    """Whether ``migrate_legacy_reward_impl`` moves the top-level ``custom_reward_function`` onto
    ``reward.custom_reward_function`` (it does when any of its values is set, and then replaces it whole)."""
    legacy = _get(config, "custom_reward_function")
    values = legacy.values() if hasattr(legacy, "values") else ()
    return any(v is not None for v in values)


def _effective(config: Any, migrated: bool) -> dict[str, Any]:
    """The reward keys verl will read: ``reward.*``, with the legacy keys migrated over them as
    ``migrate_legacy_reward_impl`` does when ``migrated``."""
    keys = {"path": _get(config, "reward.custom_reward_function.path"),
            "name": _get(config, "reward.custom_reward_function.name"),
            "manager": _get(config, "reward.reward_manager.name"),
            "source": _get(config, "reward.reward_manager.source"),
            "module": _get(config, "reward.reward_manager.module.path")}
    if not migrated:
        return keys
    if _legacy_function_set(config):
        keys["path"] = _get(config, "custom_reward_function.path")
        keys["name"] = _get(config, "custom_reward_function.name")
    if _get(config, "reward_model.reward_manager") is not None:
        keys["manager"] = _get(config, "reward_model.reward_manager")
    if _get(config, "reward_model.reward_loop_source") is not None:
        keys["source"] = _get(config, "reward_model.reward_loop_source")
        keys["module"] = _get(config, "reward_model.reward_loop_module_path")
    return keys


def config_problems(config: Any, verl_version: str | None = None) -> list[str]:
    """Why ``config`` (a verl trainer config) would not score with arbiter; ``[]`` when it does. Where verl
    migrates the legacy keys onto ``reward.*`` (:func:`migrates_legacy_keys`: a fully-async config, or
    ``main_ppo`` of verl < 0.9, ``verl_version`` defaulting to the installed one) they are read as migrated."""
    problems = []
    migrated = migrates_legacy_keys(config, verl_version)
    keys = _effective(config, migrated)
    path, manager, source, module = keys["path"], keys["manager"], keys["source"], keys["module"]
    legacy_path = _get(config, "custom_reward_function.path")
    uses_manager = source == "importlib" and str(module or "").removesuffix(".py").replace("/", ".").endswith(
        "arbiter.verl.reward_loop")
    if not names_arbiter(path) and not uses_manager:
        who = "fully-async training" if is_fully_async(config) else "verl 0.8's main_ppo"
        where = (f"custom_reward_function.path (the legacy key, which {who} migrates over "
                 "reward.custom_reward_function)" if migrated and _legacy_function_set(config)
                 else "reward.custom_reward_function.path")
        problems.append(f"{where} is {path!r}, not pkg://arbiter.verl.reward: verl scores "
                        "with its own reward function (prime_code for code rows)")
    name = keys["name"] or "compute_score"
    if names_arbiter(path) and not uses_manager and name not in PER_RESPONSE_FUNCTIONS:
        problems.append(f"custom_reward_function.name is {name!r}: verl's reward loop calls it once per response "
                        "with (data_source, solution_str, ground_truth, extra_info); arbiter.verl.reward's functions "
                        f"for that are {', '.join(PER_RESPONSE_FUNCTIONS)} (compute_score_batch takes lists: a "
                        "caller with a batch of its own)")
    if not migrated and names_arbiter(legacy_path) and not names_arbiter(path):
        problems.append("the legacy top-level custom_reward_function names arbiter, but verl >= 0.9's main_ppo "
                        "ignores it (only the fully-async trainer migrates it): "
                        "set reward.custom_reward_function.path=pkg://arbiter.verl.reward")
    legacy_manager = _get(config, "reward_model.reward_manager")
    if legacy_manager is not None and not migrated:
        problems.append(f"reward_model.reward_manager={legacy_manager!r} is a verl <= 0.8 key that verl >= 0.9's "
                        "main_ppo ignores (only the fully-async trainer migrates it): use reward.reward_manager.name")
    if source in (None, "register") and manager is not None and manager not in VERL09_MANAGERS:
        problems.append(f"reward.reward_manager.name={manager!r} is not registered in verl 0.9's reward loop "
                        f"(known: {', '.join(VERL09_MANAGERS)})")
    return problems


def warn_once(config: Any, where: str) -> list[str]:
    """Log :func:`config_problems` once per distinct message, loudly (``WARNING``), naming ``where``."""
    problems = config_problems(config)
    for p in problems:
        if p not in _warned:
            _warned.add(p)
            log.warning("arbiter (%s): THIS VERL CONFIG DOES NOT SCORE WITH ARBITER AS INTENDED: %s", where, p)
    return problems


__all__ = ["ARBITER_REWARD_PATHS", "PER_RESPONSE_FUNCTIONS", "VERL09_MANAGERS", "config_problems", "is_fully_async", "migrates_legacy_keys",
           "names_arbiter", "warn_once"]
