"""Train a tiny transformer in NumPy and replay how its attention forms (no autograd library).

    from core.training import recommended, train, load_trained
    result = train(recommended("induction"), on_progress=..., should_stop=event.is_set)
    result.traces(tokens)        # one core.multihead.AttentionTrace per layer
    result.snapshots             # (S, n_layers, h, T, T) float32 maps on the task's fixed example

tasks.py (data) -> model.py (forward, through core.multihead) -> backward.py (by hand)
-> adam.py -> train.py (loop, snapshots, history); patterns.py names what heads learned;
pretrain.py writes and reads the pre-trained files in trained/.
"""

from core.training.model import ModelConfig, forward, init_params, traces
from core.training.patterns import HeadPatterns, head_patterns, named_pattern
from core.training.tasks import TASK_NAMES, TASKS, Batch, Task, get_task
from core.training.train import (
    MAX_STEPS,
    RECOMMENDED,
    SAFE_LRS,
    SEED_SURVEY,
    History,
    Progress,
    SeedSurvey,
    TrainResult,
    TrainSettings,
    load_trained,
    recommended,
    seed_note,
    train,
)

__all__ = [
    "MAX_STEPS",
    "RECOMMENDED",
    "SAFE_LRS",
    "SEED_SURVEY",
    "TASKS",
    "TASK_NAMES",
    "Batch",
    "HeadPatterns",
    "History",
    "ModelConfig",
    "Progress",
    "SeedSurvey",
    "Task",
    "TrainResult",
    "TrainSettings",
    "forward",
    "get_task",
    "head_patterns",
    "init_params",
    "load_trained",
    "named_pattern",
    "recommended",
    "seed_note",
    "traces",
    "train",
]
