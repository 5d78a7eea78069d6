"""Quality: tasks, scorers, the code sandbox, base plausibility, paired statistics, calibration."""
