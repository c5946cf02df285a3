"""The page's computing: its model source, the cached runs and their bounds, the training jobs."""
