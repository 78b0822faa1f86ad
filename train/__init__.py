"""jaxcredit.train: configs and presets, the training loop, sweeps, run directories."""

from jaxcredit.train.backends import BACKENDS, run_cells
from jaxcredit.train.config import TrainConfig, config_from_dict
from jaxcredit.train.driver import run_training, summarize
from jaxcredit.train.gate import GATE_THRESHOLD, gate_config, run_gate
from jaxcredit.train.loop import Trainer, TrainState, make_train
from jaxcredit.train.matched import run_matched
from jaxcredit.train.population import population_configs, run_population, train_population
from jaxcredit.train.presets import PRESETS, get_preset
from jaxcredit.train.rundir import RunDir
from jaxcredit.train.sweep import SweepSpec, format_table, run_sweep, sweep_table
from jaxcredit.train.tuning import tune_points, tuning_plan, tuning_record
from jaxcredit.train.tuning_rules import choose

__all__ = [
    "BACKENDS",
    "GATE_THRESHOLD",
    "PRESETS",
    "RunDir",
    "SweepSpec",
    "TrainConfig",
    "TrainState",
    "Trainer",
    "choose",
    "config_from_dict",
    "format_table",
    "gate_config",
    "get_preset",
    "make_train",
    "population_configs",
    "run_cells",
    "run_gate",
    "run_matched",
    "run_population",
    "run_sweep",
    "run_training",
    "summarize",
    "sweep_table",
    "train_population",
    "tune_points",
    "tuning_plan",
    "tuning_record",
]
