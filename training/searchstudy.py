"""A search's Optuna study: its storage (Optuna's own tables in the app's
database, SQLite or PostgreSQL, so a study outlives the web and the worker),
its sampler and pruner by their names on the form, and the distributions
its space draws from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import connection

if TYPE_CHECKING:
    import optuna

# What the form offers, by name: (label, what it does).
SAMPLERS = {"tpe": "TPE (learns from the trials so far)", "random": "Random"}
PRUNERS = {
    "asha": "Successive halving (ASHA): at each rung, keep the best third",
    "hyperband": "Hyperband: successive halving in several brackets",
    "median": "Median: stop a trial worse than the median of the others at the same validation",
    "none": "None: every trial runs its epochs",
}
# The settings a search draws: log-uniformly from a range, or among choices.
LOG_UNIFORM = ("lr", "weight_decay")
CHOSEN = ("batch_size", "solver", "network", "flip", "translate", "rotation", "scale", "color_jitter")
REDUCTION_FACTOR = 3
# Trials that complete before the median pruner stops any.
MEDIAN_STARTUP_TRIALS = 3

_storages: dict[str, optuna.storages.RDBStorage] = {}


def imported():
    """Optuna, imported at first use: it takes seconds to import, which every
    web, worker and management process would otherwise pay at start."""
    import logging

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    logging.getLogger("alembic").setLevel(logging.WARNING)
    return optuna


def database_url() -> str:
    """The app's database as SQLAlchemy names it."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return (f"postgresql+psycopg://{db.get('USER') or 'postgres'}{password}@{db.get('HOST') or '127.0.0.1'}:"
            f"{db.get('PORT') or 5432}/{db['NAME']}")


def storage() -> optuna.storages.RDBStorage:
    """One storage per database a process uses (a test run switches databases)."""
    from sqlalchemy.pool import NullPool

    optuna = imported()
    from sqlalchemy.exc import IntegrityError, OperationalError

    url = database_url()
    if url not in _storages:
        # No pool: a connection kept open would hold the database (a test
        # database could not be dropped, a worker's would idle between beats).
        try:
            _storages[url] = optuna.storages.RDBStorage(url, engine_kwargs={"poolclass": NullPool})
        except (IntegrityError, OperationalError):
            # Another process made Optuna's tables at the same moment (both
            # stamped their version): they are there now.
            _storages[url] = optuna.storages.RDBStorage(url, engine_kwargs={"poolclass": NullPool})
    return _storages[url]


def sampler(name: str, seed: int | None = None) -> optuna.samplers.BaseSampler:
    optuna = imported()
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed)


def pruner(name: str, max_resource: int) -> optuna.pruners.BasePruner:
    """Rungs count validations: 1, 3, 9… for successive halving."""
    optuna = imported()
    if name == "asha":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=REDUCTION_FACTOR)
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=1, max_resource=max(max_resource, 1),
                                              reduction_factor=REDUCTION_FACTOR)
    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=MEDIAN_STARTUP_TRIALS, n_warmup_steps=0)
    return optuna.pruners.NopPruner()


def distributions(space: dict[str, Any]) -> dict[str, optuna.distributions.BaseDistribution]:
    """Log-uniform learning rate and weight decay, choices of the rest
    (batch size, solver, network, flips, translation, rotation, zoom, colour jitter)."""
    optuna = imported()
    drawn: dict[str, optuna.distributions.BaseDistribution] = {}
    for name in LOG_UNIFORM:
        if space.get(name):
            low, high = space[name]
            drawn[name] = optuna.distributions.FloatDistribution(low, high, log=True)
    for name in CHOSEN:
        if space.get(name):
            drawn[name] = optuna.distributions.CategoricalDistribution(list(space[name]))
    return drawn


def create(name: str, maximize: bool) -> None:
    optuna = imported()
    optuna.create_study(study_name=name, storage=storage(), direction="maximize" if maximize else "minimize")


def load(name: str, sampler_name: str, pruner_name: str, max_resource: int) -> optuna.Study:
    optuna = imported()
    return optuna.load_study(study_name=name, storage=storage(), sampler=sampler(sampler_name),
                             pruner=pruner(pruner_name, max_resource))


def importances(study: optuna.Study) -> dict[str, float]:
    """Each drawn setting's share of the value's variance among the complete
    trials (fANOVA); empty until two trials completed with differing settings."""
    optuna = imported()
    complete = study.get_trials(deepcopy=False, states=[optuna.trial.TrialState.COMPLETE])
    if len(complete) < 2:
        return {}
    try:
        return dict(optuna.importance.get_param_importances(study))
    except (ValueError, RuntimeError):  # every complete trial drew the same settings
        return {}
